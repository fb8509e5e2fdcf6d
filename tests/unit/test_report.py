"""EvaluationReport: scores in row order, summary with bootstrap CI, exports."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import ragmeter
from ragmeter import NotFoundError
from ragmeter.reports.stats import bootstrap_mean_ci


def _report() -> ragmeter.EvaluationReport:
    rng = random.Random(3)
    rows = []
    for i in range(200):
        ret = [f"d{j}" for j in rng.sample(range(30), 10)]
        rows.append(
            {"query": f"q{i}", "retrieved_ids": ret, "reference_ids": [f"d{rng.randrange(30)}"]}
        )
    rows.append({"query": "none", "retrieved_ids": ["d1"], "reference_ids": []})
    return ragmeter.evaluate(rows, ["mrr", "hit_rate@5"])


def test_summary_counts_nulls_and_ci_brackets_mean() -> None:
    report = _report()
    summary = report.summary()
    mrr = summary["mrr"]
    scores = [s for s in report.scores("mrr") if s is not None]
    assert (mrr["count"], mrr["null"]) == (200, 1)
    assert mrr["mean"] == pytest.approx(float(np.mean(scores)))
    assert mrr["ci95_low"] < mrr["mean"] < mrr["ci95_high"]
    assert report.summary() == summary  # seeded: the same interval every time


def test_bootstrap_ci_matches_normal_theory_on_large_samples() -> None:
    values = np.random.default_rng(0).normal(0.5, 0.2, size=5000)
    low, high = bootstrap_mean_ci(values, resamples=2000)
    half_width = 1.96 * values.std(ddof=1) / np.sqrt(len(values))
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.1)
    assert bootstrap_mean_ci(np.array([0.3])) == (0.3, 0.3)


def test_scores_results_and_unknown_metric() -> None:
    report = _report()
    assert len(report.scores("hit_rate@5")) == 201
    assert len(report) == 402
    assert [r.row_index for r in report.results("mrr")] == list(range(201))
    with pytest.raises(NotFoundError, match="it has: mrr, hit_rate@5"):
        report.scores("ndcg")


def test_to_pandas_and_to_jsonl(tmp_path: Path) -> None:
    report = _report()
    frame = report.to_pandas()
    assert list(frame.columns) == [
        "row_index", "metric_name", "score", "passing", "feedback", "error",
        "prediction", "contexts", "prediction_cost", "query", "raw_dataset", "cost", "error_kind",
        "details",
    ]  # fmt: skip
    assert len(frame) == 402
    path = report.to_jsonl(tmp_path / "out" / "results.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 402
    assert lines[0]["row_index"] == 0
    assert lines[1]["metric_name"] == "hit_rate@5"
    last = lines[-2]
    assert last["score"] is None
    assert "no relevant item" in last["error"] and last["error_kind"] == "input"
    assert all(line["error"] is None for line in lines if line["score"] is not None)
    assert all(line["error_kind"] is None for line in lines if line["score"] is not None)
