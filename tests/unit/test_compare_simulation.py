"""The family-wise error of ``runs compare``, simulated: two runs of the same system (no
true difference on any of 5 metrics) compared 1,000 times must report "better" or "worse"
on any metric in at most 5% of the comparisons; each metric's own 95% interval (the old,
uncorrected reading) fails that bound, so the check can fail. With a known shift the power
is measured and recorded. Everything runs through ``runs.views.compare.compare_sides``, the code
the service, the dashboard, the report and ``ragmeter runs compare`` share."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragmeter.reports.stats import Correction
from ragmeter.runs.views.compare import Side, compare_sides

COMPARES = 1_000
ROWS = 1_000
METRICS = ("hit_rate", "mrr", "faithfulness", "answer_relevancy", "context_recall")


def _run(rng: np.random.Generator, ease: np.ndarray, shift: float) -> dict[str, np.ndarray]:
    """One run's scores of the same rows: each metric driven by the row's ease (so the
    metrics are correlated, as real ones are) plus this run's own noise; ``shift`` moves
    faithfulness up."""
    n = len(ease)
    rank = rng.geometric(np.clip(ease, 0.05, 1.0))
    faithfulness = np.clip(rng.beta(1 + 4 * ease, 2.0) + shift, 0.0, 1.0)
    return {
        "hit_rate": (rank <= 5).astype(float),  # 0/1
        "mrr": np.where(rank <= 10, 1.0 / rank, 0.0),  # a lattice of 1/k
        "faithfulness": np.round(faithfulness * 6) / 6,  # k of 6 statements
        "answer_relevancy": np.clip(ease + rng.normal(0.0, 0.2, n), 0.0, 1.0),
        "context_recall": (rng.random(n) < 0.3 + 0.6 * ease).astype(float),
    }


def _verdicts(seed: int, shift: float, correction: Correction) -> dict[str, str | None]:
    rng = np.random.default_rng(seed)
    ease = rng.random(ROWS)
    base, other = _run(rng, ease, 0.0), _run(rng, ease, shift)
    keys = np.arange(ROWS)
    sides: dict[str, tuple[Side | None, Side | None]] = {
        name: (Side(keys, base[name]), Side(keys, other[name])) for name in METRICS
    }
    found = compare_sides(sides, "id", correction=correction)
    return {c.metric_name: c.verdict for c in found}


def _claims(count: int, shift: float, correction: Correction) -> list[dict[str, str | None]]:
    return [_verdicts(seed, shift, correction) for seed in range(count)]


def _any_claim(verdicts: dict[str, str | None]) -> bool:
    return any(v in ("better", "worse") for v in verdicts.values())


def test_no_true_difference_claims_one_in_at_most_5_percent(
    record_property: Callable[[str, object], None],
) -> None:
    family = sum(map(_any_claim, _claims(COMPARES, 0.0, "bonferroni"))) / COMPARES
    # each metric's own 95% interval and p (the uncorrected reading), on 300 compares
    alone = sum(map(_any_claim, _claims(300, 0.0, "none"))) / 300
    record_property("family_wise_error", family)
    record_property("family_wise_error_uncorrected", alone)
    print(
        f"\nfamily-wise error over {COMPARES} compares x 5 metrics: {family:.3f} corrected; "
        f"{alone:.3f} with each metric's own 95% interval"
    )
    assert family <= 0.05
    assert alone > 0.10  # the uncorrected reading fails the bound: this test can fail


def test_power_on_a_known_shift_is_measured(
    record_property: Callable[[str, object], None],
) -> None:
    """faithfulness up by 0.04 (about an eighth of its paired differences' spread) on 1,000
    rows, 200 compares: how often it is called better (never worse)."""
    found = [v["faithfulness"] for v in _claims(200, 0.04, "bonferroni")]
    power = found.count("better") / len(found)
    record_property("power_faithfulness_plus_0_04", power)
    print(f"\npower on faithfulness +0.04 over {ROWS} rows among 5 metrics: {power:.3f}")
    assert power > 0.8 and "worse" not in found
