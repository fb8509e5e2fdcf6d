"""Comparing two runs: a comparison of nothing is an error, a metric without pairs says why,
rows pair by query or id, a real regression is significant and noise is not, and the
interval, p-value and verdict are corrected the same way."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.errors import ConfigError
from ragmeter.runs.views.compare import compare_scores


def test_runs_with_no_shared_query_are_an_error() -> None:
    base = [("q1", "mrr", 0.5), ("q2", "mrr", 1.0)]
    other = [("q3", "mrr", 1.0), ("q4", "mrr", 0.0)]
    with pytest.raises(ConfigError, match="share no scored query") as info:
        compare_scores(base, other)
    assert "mrr" in str(info.value) and "query text" in str(info.value)


def test_shared_queries_null_on_one_side_are_no_pairs() -> None:
    base = [("q1", "mrr", None), ("q2", "mrr", 1.0)]
    other = [("q1", "mrr", 1.0), ("q2", "mrr", None)]
    with pytest.raises(ConfigError, match="share no scored query"):
        compare_scores(base, other)


def test_a_metric_without_pairs_gets_a_note() -> None:
    base = [("q1", "mrr", 0.5), ("q1", "faithfulness", None)]
    other = [("q1", "mrr", 1.0), ("q1", "faithfulness", 0.8)]
    mrr, faithfulness = compare_scores(base, other)
    assert (mrr.paired, mrr.delta, mrr.ci_method) == (1, 0.5, "percentile")
    assert mrr.note == "BCa undefined: a single pair"
    assert [(n.code, n.values) for n in mrr.notes] == [("bca_single", {})]
    assert mrr.ci_note == "interval not informative: all 1 values equal" and mrr.small_sample
    assert (mrr.scale, faithfulness.scale) == ("0–1", "0–1")
    assert (faithfulness.paired, faithfulness.delta) == (0, None)
    assert faithfulness.other_mean == 0.8
    assert faithfulness.note == (
        "no query is scored in both runs (0 rows scored in the base run, 1 in the other; "
        "rows pair by query text)"
    )
    assert [(n.code, n.values) for n in faithfulness.notes] == [
        ("unpaired", {"by": "query", "scored_a": 0, "scored_b": 1})
    ]


def test_runs_with_no_shared_metric_are_an_error() -> None:
    with pytest.raises(ConfigError, match=r"share no metric \(base: mrr; other: ndcg\)"):
        compare_scores([("q1", "mrr", 1.0)], [("q1", "ndcg", 1.0)])


def test_unpaired_rows_are_counted_on_each_side() -> None:
    base = [("q1", "mrr", 0.5), ("q2", "mrr", 1.0), ("q3", "mrr", 0.0), ("q4", "mrr", None)]
    other = [("q1", "mrr", 1.0), ("q3", "mrr", None), ("q4", "mrr", 1.0), ("q5", "mrr", 0.5)]
    (mrr,) = compare_scores(base, other)
    # pairs: q1 only; base scored q2, q3 without a partner; other scored q4, q5
    assert (mrr.paired, mrr.base_unpaired, mrr.other_unpaired) == (1, 2, 2)
    assert mrr.paired_by == "query"


def test_rows_pair_by_id_when_every_row_has_one() -> None:
    # the same ids under reworded queries pair; by query text nothing would
    base = [("what is x", "mrr", 0.0, "a"), ("what is y", "mrr", 1.0, 7)]
    other = [("y?", "mrr", 0.5, 7), ("x?", "mrr", 1.0, "a")]
    (mrr,) = compare_scores(base, other)
    assert (mrr.paired_by, mrr.paired, mrr.delta) == ("id", 2, pytest.approx(0.25))
    assert (mrr.better, mrr.worse) == (1, 1)


def test_a_row_without_id_makes_rows_pair_by_query() -> None:
    base = [("q1", "mrr", 0.0, "a"), ("q2", "mrr", 1.0, None)]
    other = [("q1", "mrr", 1.0, "b"), ("q2", "mrr", 1.0)]
    (mrr,) = compare_scores(base, other)
    assert (mrr.paired_by, mrr.paired, mrr.delta) == ("query", 2, 0.5)


def _runs(shift: float, seed: int) -> tuple[list[tuple[str, str, float]], ...]:
    """Two runs of 300 rows x 3 metrics; ``faithfulness`` made worse by ``shift`` in the
    other, ``mrr`` and ``hit_rate`` only redrawn (judge noise)."""
    rng = np.random.default_rng(seed)
    base: list[tuple[str, str, float]] = []
    other: list[tuple[str, str, float]] = []
    for i in range(300):
        truth = rng.random()
        for metric in ("faithfulness", "mrr", "hit_rate"):
            noise = rng.normal(0.0, 0.1, 2)
            drop = shift if metric == "faithfulness" else 0.0
            base.append((f"q{i}", metric, float(np.clip(truth + noise[0], 0, 1))))
            other.append((f"q{i}", metric, float(np.clip(truth + noise[1] - drop, 0, 1))))
    return base, other


def test_a_known_regression_is_worse_and_noise_is_no_evidence() -> None:
    base, other = _runs(0.05, seed=1)
    found = {c.metric_name: c for c in compare_scores(base, other)}
    faithfulness = found["faithfulness"]
    assert faithfulness.verdict == "worse"
    assert faithfulness.p_adjusted is not None and faithfulness.p_adjusted <= 0.05
    assert faithfulness.ci95_high is not None and faithfulness.ci95_high < 0
    assert found["mrr"].verdict == found["hit_rate"].verdict == "no_evidence"
    for c in found.values():
        assert c.p_value is not None and c.p_adjusted == pytest.approx(min(1.0, 3 * c.p_value))
        assert c.ci_method == "bca" and c.p_method == "randomisation"
        assert (c.correction, c.family, c.ci_level) == (
            "bonferroni",
            3,
            pytest.approx(1 - 0.05 / 3),
        )
        assert c.ci_note is None and not c.small_sample and c.margin is None


def test_alpha_decides_the_verdict() -> None:
    base, other = _runs(0.025, seed=4)
    (faithfulness, *_) = compare_scores(base, other)
    assert faithfulness.p_adjusted is not None and 0.001 < faithfulness.p_adjusted < 0.05
    assert faithfulness.verdict == "worse"
    (strict, *_) = compare_scores(base, other, alpha=0.001)
    assert strict.verdict == "no_evidence"
    assert strict.ci95_low is not None and faithfulness.ci95_low is not None
    assert strict.ci95_low < faithfulness.ci95_low  # a 99.9% family-wise interval is wider


def test_each_metric_alone_is_the_gate_s_interval() -> None:
    base, other = _runs(0.025, seed=4)
    (family, *_) = compare_scores(base, other)
    (alone, *_) = compare_scores(base, other, correction="none")
    assert (alone.correction, alone.family, alone.ci_level) == ("none", 1, pytest.approx(0.95))
    assert alone.p_adjusted == alone.p_value
    assert family.ci95_low is not None and alone.ci95_low is not None
    assert family.ci95_low < alone.ci95_low


def test_equivalence_needs_a_margin_the_interval_fits_in() -> None:
    base, other = _runs(0.0, seed=3)
    plain = {c.metric_name: c for c in compare_scores(base, other)}
    assert {c.verdict for c in plain.values()} == {"no_evidence"}
    wide = {c.metric_name: c for c in compare_scores(base, other, margin=0.05)}
    assert {c.verdict for c in wide.values()} == {"equivalent"}
    for c in wide.values():
        assert c.margin == 0.05 and c.ci95_low is not None and c.ci95_high is not None
        assert c.ci95_low > -0.05 and c.ci95_high < 0.05
    tight = compare_scores(base, other, margin=0.001)
    assert {c.verdict for c in tight} == {"no_evidence"}
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="margin"):
            compare_scores(base, other, margin=bad)


def test_swapping_the_runs_mirrors_the_comparison() -> None:
    base, other = _runs(0.05, seed=2)
    forward, backward = compare_scores(base, other), compare_scores(other, base)
    for a, b in zip(forward, backward, strict=True):
        assert (a.p_value, a.p_adjusted, a.paired) == (b.p_value, b.p_adjusted, b.paired)
        assert a.delta == -b.delta if a.delta is not None else b.delta is None
        assert (a.ci95_low, a.ci95_high) == (-b.ci95_high, -b.ci95_low)  # type: ignore[operator]
        assert (a.better, a.worse) == (b.worse, b.better)
    assert (forward[0].verdict, backward[0].verdict) == ("worse", "better")
