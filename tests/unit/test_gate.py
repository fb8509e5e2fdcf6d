"""The gate's rules and their verdicts: rules parse from text or are refused naming the rule;
absolute rules read the candidate's mean, CI, pass rate and null rate; a baseline rule is
judged on the paired difference's confidence bound, so a real regression of a tenth of the
rows fails naming those rows and seeded noise of the same size on every row passes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ragmeter
from ragmeter.errors import ConfigError, DatasetError, NotFoundError
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.reports.stats import bootstrap_mean_ci
from ragmeter.runs.gates.gate import gate, gate_reports
from ragmeter.runs.gates.rules import parse_rule, parse_rules


def _record(i: int, metric: str, score: float | None, **extra: Any) -> ResultRecord:
    return ResultRecord(
        row_index=i,
        metric_name=metric,
        score=score,
        passing=extra.get("passing"),
        feedback=extra.get("feedback"),
        error=None if score is not None else "judge timed out",
        prediction=f"answer {i}",
        contexts=None,
        prediction_cost=0,
        query=f"question {i}?",
        raw_dataset={"id": f"q{i}", "query": f"question {i}?", "response": f"answer {i}"},
        error_kind=None if score is not None else "upstream",
    )


def _report(scores: dict[str, list[float | None]], **extra: Any) -> EvaluationReport:
    names = list(scores)
    rows = len(next(iter(scores.values())))
    records = [
        _record(i, name, scores[name][i], **{k: v[i] for k, v in extra.items()})
        for i in range(rows)
        for name in names
    ]
    return EvaluationReport(records, names, rows, 0.0)


@pytest.mark.parametrize(
    ("text", "metric", "stat", "op", "bound"),
    [
        ("faithfulness.mean >= 0.8", "faithfulness", "mean", ">=", 0.8),
        ("  mrr.ci95_low>=0.6 ", "mrr", "ci95_low", ">=", 0.6),
        ("ndcg@10.ci95_high < 1", "ndcg@10", "ci95_high", "<", 1.0),
        ("answer_correctness.pass_rate >= 0.9", "answer_correctness", "pass_rate", ">=", 0.9),
        ("null_rate <= 0.02", None, "null_rate", "<=", 0.02),
        ("mrr.null_rate <= 0", "mrr", "null_rate", "<=", 0.0),
        ("faithfulness: delta >= -0.02", "faithfulness", "delta", ">=", -0.02),
        ("faithfulness.delta > -2e-2", "faithfulness", "delta", ">", -0.02),
    ],
)
def test_rules_parse_from_text(
    text: str, metric: str | None, stat: str, op: str, bound: float
) -> None:
    rule = parse_rule(text)
    assert (rule.metric, rule.stat, rule.op, rule.bound) == (metric, stat, op, bound)
    assert rule.needs_baseline == (stat == "delta")
    assert parse_rule(rule.name) == rule.__class__(rule.name, metric, stat, op, bound)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("faithfulness.average >= 0.8", "unknown statistic 'average'"),
        ("faithfulness.mean >= high", "the bound 'high' is not a number"),
        ("faithfulness.mean => 0.8", "not understood"),
        ("faithfulness.mean >= nan", "not a number"),
        ("mean >= 0.8", "name the metric"),
        ("mrr.pass_rate >= 90", "between 0 and 1"),
        ("faithfulness >= 0.8", "unknown statistic 'faithfulness'"),
    ],
)
def test_a_bad_rule_is_a_config_error_naming_it(text: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_rule(text)
    assert f"gate rule '{text.strip()}'" in str(info.value) and why in str(info.value)


def test_duplicate_rules_are_kept_once() -> None:
    rules = parse_rules(["mrr.mean >= 0.5", "mrr.mean>=0.5", "mrr.mean >= 0.6"])
    assert [r.name for r in rules] == ["mrr.mean >= 0.5", "mrr.mean >= 0.6"]


def test_absolute_rules_read_mean_ci_pass_rate_and_null_rate() -> None:
    scores: list[float | None] = [1.0, 0.5, 0.0, 1.0, None, 0.75, 1.0, 0.25]
    passing = [None if s is None else s >= 0.5 for s in scores]
    report = _report({"grade": scores}, passing=passing)
    result = gate_reports(
        report,
        [
            "grade.mean >= 0.6",
            "grade.ci95_low >= 0.5",
            "grade.ci95_high <= 1",
            "grade.pass_rate >= 0.7",
            "null_rate <= 0.1",
        ],
    )
    mean, low, high, pass_rate, null_rate = result.outcomes
    values = np.array([s for s in scores if s is not None])
    ci = bootstrap_mean_ci(values)
    assert mean.value == pytest.approx(values.mean()) and mean.passed
    assert (low.value, high.value) == ci and not low.passed and high.passed
    assert pass_rate.value == pytest.approx(5 / 7) and pass_rate.passed
    assert null_rate.value == pytest.approx(1 / 8) and not null_rate.passed
    assert not result.passed and [o.rule.stat for o in result.failed] == ["ci95_low", "null_rate"]
    # the rows behind a failed rule: those below its bound, lowest first, nulls last
    assert [r.row_index for r in low.rows] == [2, 7, 4]
    assert low.rows[0].query == "question 2?" and low.rows[0].response == "answer 2"
    (null_row,) = null_rate.rows
    assert null_row.row_index == 4 and null_row.reason == "judge timed out"
    assert "1 of 8 results of all metrics have no score" in null_rate.detail
    # 7 scores: the interval is reported, and flagged as saying little
    assert low.detail.endswith("; interval not informative: 7 values (fewer than 30)")


def test_a_failed_pass_rate_lists_the_failing_rows_with_the_judges_feedback() -> None:
    report = _report(
        {"grade": [5.0, 1.0, 4.0, 2.0]},
        passing=[True, False, True, False],
        feedback=["fine", "off topic", "good", "vague"],
    )
    (outcome,) = gate_reports(report, ["grade.pass_rate >= 0.9"]).outcomes
    assert outcome.value == 0.5 and not outcome.passed
    assert [(r.row_index, r.reason) for r in outcome.rows] == [(1, "off topic"), (3, "vague")]


def test_rules_that_cannot_apply_are_config_errors_naming_them() -> None:
    report = _report({"mrr": [1.0, 0.5]})
    with pytest.raises(ConfigError, match=r"'faithfulness.mean >= 0.8': the run has no metric"):
        gate_reports(report, ["faithfulness.mean >= 0.8"])
    with pytest.raises(ConfigError, match="mrr gives no per-row passing verdict"):
        gate_reports(report, ["mrr.pass_rate >= 0.8"])
    with pytest.raises(ConfigError, match=r"'mrr: delta >= -0.02' compares with a baseline"):
        gate_reports(report, ["mrr: delta >= -0.02"])
    with pytest.raises(ConfigError, match="no gate rule"):
        gate_reports(report, [])


def test_a_metric_with_no_score_fails_its_mean_rule() -> None:
    (outcome,) = gate_reports(_report({"mrr": [None, None]}), ["mrr.mean >= 0"]).outcomes
    assert (
        outcome.value is None and not outcome.passed and outcome.detail == "no scored row (2 null)"
    )


def _graded(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Judged scores on a grid of thirds, as a 3-statement faithfulness gives them."""
    return rng.integers(1, 4, size=rows) / 3.0


def _noisy(scores: np.ndarray, rng: np.random.Generator, share: float) -> np.ndarray:
    """The same rows judged again: a ``share`` of them moves a third up or down."""
    step = rng.choice([-1.0, 1.0], size=len(scores)) / 3.0
    moved = np.where(rng.random(len(scores)) < share, scores + step, scores)
    return np.clip(moved, 0.0, 1.0)


def test_a_tenth_of_the_rows_made_worse_fails_the_baseline_rule_naming_them() -> None:
    rng = np.random.default_rng(7)
    base = _graded(rng, 200)
    candidate = _noisy(base, rng, 0.2)
    worse = rng.choice(200, size=20, replace=False)
    candidate[worse] = 0.0
    result = gate_reports(
        _report({"faithfulness": list(candidate)}),
        ["faithfulness: delta >= -0.02"],
        _report({"faithfulness": list(base)}),
    )
    (outcome,) = result.outcomes
    assert not result.passed and outcome.value is not None and outcome.value < -0.02
    assert result.paired_by == "id" and result.unpaired == {"faithfulness": (0, 0)}
    # the largest drops first: the rows set to 0 from a full score
    listed = {r.row_index for r in outcome.rows}
    full = {int(i) for i in worse if base[i] == 1.0}
    assert len(outcome.rows) == 10 and listed <= set(map(int, worse))
    assert full <= listed or listed <= full
    assert all(r.delta is not None and r.delta < 0 for r in outcome.rows)
    assert "pairs by id" in outcome.detail and "95% CI" in outcome.detail
    (faithfulness,) = result.comparison  # the gate's own 95% interval, not a family's
    assert (faithfulness.correction, faithfulness.ci_level) == ("none", 0.95)


@pytest.mark.parametrize("seed", range(5))
def test_a_candidate_differing_only_by_judge_noise_passes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = _graded(rng, 200)
    result = gate_reports(
        _report({"faithfulness": list(_noisy(base, rng, 0.2))}),
        ["faithfulness: delta >= -0.05"],
        _report({"faithfulness": list(base)}),
    )
    assert result.passed, result.outcomes[0].detail
    (outcome,) = result.outcomes
    assert outcome.value is not None and outcome.value < 0.0  # the bound, not the estimate
    assert outcome.rows == ()


def test_unpaired_rows_are_counted() -> None:
    base = _report({"mrr": [1.0, 0.5, 0.5, 1.0]})
    records = [r for r in _report({"mrr": [1.0, 0.5, 0.0, 1.0, 1.0]}) if r.row_index != 1]
    candidate = EvaluationReport(records, ["mrr"], 4, 0.0)
    result = gate_reports(candidate, ["mrr: delta >= -1"], base)
    assert result.unpaired == {"mrr": (1, 1)}
    assert "unpaired: 1 baseline, 1 candidate" in result.outcomes[0].detail


def test_results_files_are_read_and_bad_lines_named(tmp_path: Path) -> None:
    report = _report({"mrr": [1.0, 0.5, None]})
    good = report.to_jsonl(tmp_path / "results.jsonl")
    result = ragmeter.gate(good, ["mrr.mean >= 0.7", "mrr.null_rate <= 0.5"])
    assert isinstance(result, ragmeter.runs.GateResult)
    assert result.candidate == str(good)
    assert [o.value for o in result.outcomes] == [0.75, pytest.approx(1 / 3)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + '{"metric_name": "mrr", "score": 1}\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl line 4 field 'row_index'"):
        gate(bad, ["mrr.mean >= 0.7"])
    bad.write_text('{"metric_name": "mrr", "row_index": 0, "score": "high"}\n')
    with pytest.raises(DatasetError, match=r"line 1 field 'score': must be a finite number"):
        gate(bad, ["mrr.mean >= 0.7"])
    mixed = tmp_path / "mixed.jsonl"
    lines = [
        json.dumps({**r.to_dict(), "retriever": k}) for k in ("bm25", "vector") for r in report
    ]
    mixed.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"several retrievers \(bm25, vector\)"):
        gate(mixed, ["mrr.mean >= 0.7"])
    with pytest.raises(NotFoundError, match="no results file"):
        gate(tmp_path / "missing.jsonl", ["mrr.mean >= 0.7"])
    with pytest.raises(NotFoundError, match="neither a results file nor a stored run"):
        gate("0123abcd", ["mrr.mean >= 0.7"])
    with pytest.raises(ConfigError, match=r"gate rule 'mrr\.mean >= x'"):
        gate("0123abcd", ["mrr.mean >= x"])  # the rule is named before any run is read


def test_outputs_keep_hostile_row_text_as_text() -> None:
    from ragmeter.runs.gates.output import failure_text, junit_xml, markdown

    base = _report({"grade": [1.0, 1.0]})
    records = list(_report({"grade": [0.0, 1.0]}))
    records[0] = replace(
        records[0],
        query="<script>x</script> | a\x00b\nnext",
        feedback="bad \x1b[31m | <b>",
    )
    result = gate_reports(EvaluationReport(records, ["grade"], 2, 0.0), ["grade: delta >= 0"], base)
    assert not result.passed
    root = ET.fromstring(junit_xml(result).split("?>", 1)[1])  # the XML parses
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and "\ufffd" in (failure.text or "")
    assert "<script>" in (failure.text or "")  # escaped by the XML writer, read back as text
    page = markdown(result)
    row = next(line for line in page.splitlines() if line.startswith("| 0 |"))
    assert "&lt;script&gt;x&lt;/script&gt; \\| a\ufffdb next" in row
    assert row.count(" | ") == 6  # seven cells: no pipe of the texts splits one
    assert "`grade: delta >= 0`" in page  # rule names stay readable in their code span
    assert "row 0: baseline 1 -> 0 (-1)" in failure_text(result)


def _shifted_pairs(rng: np.random.Generator, shift: float) -> tuple[list[float], list[float]]:
    """100 paired scores whose differences are drawn around exactly ``shift``."""
    base = rng.uniform(0.3, 0.7, size=100)
    return list(base), list(base + shift + rng.normal(0.0, 0.3, size=100))


def test_a_change_exactly_at_the_margin_passes_in_about_2_5_percent_of_400_simulations() -> None:
    """The bound is a one-sided 97.5% bound: a candidate whose true difference is exactly the
    margin passes only when noise pushes the whole CI above it; one no worse than the
    baseline passes most of the time (the power at 100 pairs and a margin of 0.1)."""
    rng = np.random.default_rng(2024)
    rule = ["grade: delta >= -0.1"]
    at_margin = equal = 0
    for _ in range(400):
        base, cand = _shifted_pairs(rng, -0.1)
        at_margin += gate_reports(_report({"grade": cand}), rule, _report({"grade": base})).passed
        base, cand = _shifted_pairs(rng, 0.0)
        equal += gate_reports(_report({"grade": cand}), rule, _report({"grade": base})).passed
    assert at_margin / 400 <= 0.05  # 2.5% expected; 3 standard errors above it
    assert equal / 400 >= 0.8  # ~91% expected


def test_a_null_rate_over_every_metric_names_each_rows_metric() -> None:
    from ragmeter.runs.gates.output import failure_text, markdown

    report = _report({"mrr": [1.0, None, 0.5], "grade": [None, 0.5, 0.5]})
    (outcome,) = gate_reports(report, ["null_rate <= 0.1"]).outcomes
    assert [(r.row_index, r.metric_name) for r in outcome.rows] == [(0, "grade"), (1, "mrr")]
    text = failure_text(gate_reports(report, ["null_rate <= 0.1"]))
    assert "row 0 grade: score null" in text and "row 1 mrr: score null" in text
    page = markdown(gate_reports(report, ["null_rate <= 0.1"]))
    assert "| row | metric | query | response | score | judge's reason |" in page
    assert "| 1 | mrr | question 1? | answer 1 | null | judge timed out |" in page
