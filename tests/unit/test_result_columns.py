"""Results in columns: a report over columns answers as one over records does, and per-row
results (user metrics, target failures) land in the columns with their reasons."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter import EvaluationReport, evaluate
from ragmeter.datasets import Row, load_dataset
from ragmeter.metrics import BaseEvaluationResult, EvaluationContext, RetrieverEvaluationMetric
from ragmeter.reports import ResultColumns
from ragmeter.runs.planning.scoring import build_records, resolve_metrics, score_rows
from ragmeter.runs.planning.targets import RowFailure

ROWS = [
    {"query": "a", "retrieved_ids": ["1", "2"], "reference_ids": ["2"], "team": "x"},
    {"query": "b", "retrieved_ids": ["3"], "reference_ids": []},
    {"query": "c", "contexts": ["t", "u"], "factual": ["t"], "metadata": {"k": 1}},
]


class Flaky(RetrieverEvaluationMetric):
    """A DB-GPT-style user metric: a score, a deliberate null, a NaN and a crash."""

    def sync_compute(self, prediction: Any, contexts: Any = None, query: Any = None) -> Any:
        if query == "a":
            return BaseEvaluationResult(
                score=0.25, passing=True, feedback="fine", prediction_cost=7
            )
        if query == "b":
            return BaseEvaluationResult(score=None, feedback="cannot say")
        if query == "c":
            return BaseEvaluationResult(score=float("nan"))
        raise RuntimeError("boom")

    def missing_fields(self, row: Row) -> str | None:
        return None


def _report() -> EvaluationReport:
    return evaluate([*ROWS, {"query": "d"}], [Flaky()])


def test_a_columns_report_answers_as_a_records_report(tmp_path: Path) -> None:
    rows = [*ROWS, {"query": "d", "retrieved_ids": [], "reference_ids": ["1"]}]
    report = evaluate(rows, ["mrr", "hit_rate@1"])
    records = list(report)
    again = EvaluationReport(records, report.metric_names, report.rows, report.seconds)
    assert len(report) == len(again) == 8
    assert [r.metric_name for r in records[:2]] == ["mrr", "hit_rate@1"]  # row by row
    assert records[0].raw_dataset is records[1].raw_dataset  # one raw dict per row
    for name in report.metric_names:
        assert report.scores(name) == again.scores(name)
        assert report.results(name) == again.results(name)
    assert report.errors() == again.errors() and len(report.errors()) == 2
    # the scales come from the metrics, which a report of bare records does not have
    assert report.scales == {"mrr": "0–1", "hit_rate@1": "0–1"} and again.scales == {}
    again.scales = report.scales
    assert report.summary(resamples=50) == again.summary(resamples=50)
    assert report.to_pandas().equals(again.to_pandas())
    a, b = report.to_jsonl(tmp_path / "a.jsonl"), again.to_jsonl(tmp_path / "b.jsonl")
    assert a.read_text(encoding="utf-8") == b.read_text(encoding="utf-8")
    assert records[2].error_kind == "input" and records[2].score is None


def test_user_metric_results_go_into_columns_with_reasons() -> None:
    report = _report()
    flaky = report.results("Flaky")
    assert [r.score for r in flaky] == [0.25, None, None, None]
    assert (flaky[0].passing, flaky[0].feedback, flaky[0].prediction_cost) == (True, "fine", 7)
    assert (flaky[1].error, flaky[1].error_kind) == ("cannot say", "input")
    assert flaky[2].error_kind == "metric" and "non-finite" in (flaky[2].error or "")
    assert flaky[3].error == "RuntimeError: boom" and flaky[3].error_kind == "metric"
    assert flaky[0].prediction == [] and flaky[0].query == "a"


def test_a_target_failure_is_an_upstream_null_among_scored_rows() -> None:
    dataset = load_dataset(ROWS[:2])
    metrics = resolve_metrics(["mrr", "hit_rate"])
    ctx = EvaluationContext()
    produced: list[Row | RowFailure] = [
        dataset[0],
        RowFailure("app 'x' failed: timeout"),
        dataset[1],
    ]
    per_metric = asyncio.run(score_rows(metrics, produced, ctx))
    assert [len(c) for c in per_metric] == [3, 3]
    mrr = per_metric[0]
    assert mrr.score_list() == [0.5, None, None]
    assert mrr.reason(1) == ("app 'x' failed: timeout", "upstream")
    assert mrr.reason(2)[1] == "input"
    filled = load_dataset([ROWS[0], {"query": "x"}, ROWS[1]])  # a target's columns
    again = asyncio.run(score_rows(metrics, filled, ctx, {1: "app 'x' failed: timeout"}))
    assert [c.score_list() for c in again] == [c.score_list() for c in per_metric]
    assert again[1].reason(1) == mrr.reason(1)
    records = build_records([dataset[0], dataset[0], dataset[1]], metrics, per_metric, [5, 6, 7])
    assert [r.row_index for r in records] == [5, 5, 6, 6, 7, 7]
    assert records[2].error_kind == "upstream" and records[2].prediction is None


def test_columns_view_each_row_as_dbgpt_results() -> None:
    columns = ResultColumns.failed("m", 2, "judge down", "upstream")
    assert [r.score for r in columns] == [None, None]
    assert columns[1].feedback == "judge down" and columns[-1].metric_name == "m"
    with pytest.raises(IndexError):
        columns[2]
    columns.put(0, float("inf"))
    assert columns.reason(0)[1] == "metric"
    columns.put(1, 0.5, passing=False)
    assert columns.score_list() == [None, 0.5] and np.isnan(columns.scores[0])
