"""The DB-GPT-shaped metric hierarchy, user metrics, and failures kept as data."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

import ragmeter
from ragmeter import ConfigError, DatasetError, MetricError
from ragmeter.metrics import (
    BaseEvaluationResult,
    EvaluationMetric,
    LLMEvaluationMetric,
    RetrieverEvaluationMetric,
)

ROWS = [
    {"query": "q1", "contexts": ["a", "b", "c"], "factual": ["b"]},
    {"query": "q2", "contexts": ["x", "y"], "factual": ["x"]},
    {"query": "q3", "contexts": ["m"], "factual": ["z"]},
]


class SeedMRR(RetrieverEvaluationMetric):
    """The seed's custom-metric example, as DB-GPT documents it."""

    def sync_compute(
        self,
        prediction: list[str],
        contexts: Sequence[str] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        if not prediction or not contexts:
            return BaseEvaluationResult(prediction=prediction, contexts=contexts, score=0.0)
        for i, retrieved_chunk in enumerate(prediction):
            if retrieved_chunk in contexts:
                return BaseEvaluationResult(score=1.0 / (i + 1))
        return BaseEvaluationResult(score=0.0)


def test_base_result_fields() -> None:
    fields = set(BaseEvaluationResult.model_fields)
    assert fields >= {
        "prediction",
        "contexts",
        "score",
        "passing",
        "metric_name",
        "prediction_cost",
        "feedback",
    }


def test_name_is_class_name() -> None:
    assert SeedMRR.name() == "SeedMRR"
    assert SeedMRR().metric_name == "SeedMRR"


def test_seed_custom_metric_matches_builtin() -> None:
    report = ragmeter.evaluate(ROWS, [SeedMRR(), "RetrieverMRRMetric"])
    assert report.scores("SeedMRR") == [0.5, 1.0, 0.0]
    assert report.scores("SeedMRR") == report.scores("RetrieverMRRMetric")
    first = report.results("SeedMRR")[0]
    assert first.prediction == ["a", "b", "c"]
    assert first.contexts == ["b"]
    assert first.query == "q1"
    assert first.raw_dataset["reference_contexts"] == ["b"]


def test_metric_class_is_accepted_and_top_k_cuts_prediction() -> None:
    report = ragmeter.evaluate(ROWS, [SeedMRR], top_k=1)
    assert report.scores("SeedMRR") == [0.0, 1.0, 0.0]


def test_default_compute_runs_sync_compute_off_the_event_loop() -> None:
    threads: list[int] = []

    class Recording(RetrieverEvaluationMetric):
        def sync_compute(self, prediction, contexts=None, query=None):  # type: ignore[no-untyped-def]
            threads.append(threading.get_ident())
            return BaseEvaluationResult(score=1.0)

    async def run() -> int:
        await ragmeter.aevaluate(ROWS, [Recording()])
        return threading.get_ident()

    loop_thread = asyncio.run(run())
    assert len(threads) == 3
    assert loop_thread not in threads


def test_async_compute_override() -> None:
    class AsyncLen(RetrieverEvaluationMetric):
        async def compute(self, prediction, contexts=None, query=None):  # type: ignore[no-untyped-def]
            await asyncio.sleep(0)
            return BaseEvaluationResult(score=float(len(prediction)), feedback="counted")

    report = ragmeter.evaluate(ROWS, [AsyncLen()])
    assert report.scores("AsyncLen") == [3.0, 2.0, 1.0]
    assert report.results("AsyncLen")[0].feedback == "counted"


def test_failures_become_nulls_with_reasons() -> None:
    class Flaky(RetrieverEvaluationMetric):
        def sync_compute(self, prediction, contexts=None, query=None):  # type: ignore[no-untyped-def]
            if query == "q1":
                raise RuntimeError("backend down")
            if query == "q2":
                return BaseEvaluationResult(score=float("nan"))
            return BaseEvaluationResult(score=None)

    class Unreachable(RetrieverEvaluationMetric):
        def sync_compute(self, prediction, contexts=None, query=None):  # type: ignore[no-untyped-def]
            raise ConnectionRefusedError("no one listens")

    report = ragmeter.evaluate(ROWS, [Flaky(), "mrr", Unreachable()])
    assert report.scores("Flaky") == [None, None, None]
    # a raise or NaN is a metric's bug; a deliberate null is the row's; a network error upstream
    assert [r.error_kind for r in report.errors("Flaky")] == ["metric", "metric", "input"]
    assert {r.error_kind for r in report.errors("Unreachable")} == {"upstream"}
    assert all(r.error_kind is None for r in report.results("mrr"))
    reasons = [r.error for r in report.errors("Flaky")]
    assert reasons[0] == "RuntimeError: backend down"
    assert reasons[1] is not None
    assert "non-finite" in reasons[1]
    assert reasons[2] is not None
    assert "no score" in reasons[2]
    assert report.scores("mrr") == [0.5, 1.0, 0.0]  # other metrics unaffected
    assert report.summary()["Flaky"] == {
        "mean": None, "count": 0, "null": 3, "ci95_low": None, "ci95_high": None,
        "ci_note": None, "small_sample": True, "scale": None,
    }  # fmt: skip
    assert report.summary()["mrr"]["scale"] == "0–1"  # a built-in metric declares its scale


def test_metric_without_scoring_method_is_rejected() -> None:
    class Empty(RetrieverEvaluationMetric):
        pass

    with pytest.raises(MetricError, match="neither compute nor sync_compute"):
        ragmeter.evaluate(ROWS, [Empty()])


def test_missing_field_fails_before_any_work() -> None:
    calls: list[str] = []

    class Counting(RetrieverEvaluationMetric):
        def sync_compute(self, prediction, contexts=None, query=None):  # type: ignore[no-untyped-def]
            calls.append(query or "")
            return BaseEvaluationResult(score=1.0)

    rows = [*ROWS, {"query": "q4", "contexts": ["a"], "doc_name": "awel.md"}]
    with pytest.raises(DatasetError) as info:
        ragmeter.evaluate(rows, [Counting(), "hit_rate@5"])
    assert calls == []
    err = info.value
    assert (err.row, err.field) == (3, "reference_contexts")
    assert "metric 'Counting' needs reference_contexts" in str(err)
    assert "doc_name needs a knowledge space" in str(err)


def test_id_mode_names_id_fields() -> None:
    with pytest.raises(DatasetError, match="needs retrieved_ids"):
        ragmeter.evaluate(ROWS, ["mrr(match=id)"])


def test_llm_metric_without_judge_is_a_config_error() -> None:
    class Judged(LLMEvaluationMetric):
        prompt_template = "{query} {context} {answer}"

        def _parse_evaluate_response(self, response: str) -> Any:
            return float(response)

    with pytest.raises(ConfigError, match="need a judge"):
        ragmeter.evaluate([{"query": "q", "response": "r"}], [Judged()])

    class Judge:  # a judge is checked for before the rows, so give one to see the row error
        async def complete(self, prompt: str) -> str:
            return "1"

    with pytest.raises(DatasetError, match="needs response"):
        ragmeter.evaluate([{"query": "q"}], [Judged()], judge=Judge())


def test_duplicate_and_empty_metric_lists() -> None:
    with pytest.raises(MetricError, match="given twice"):
        ragmeter.evaluate(ROWS, ["mrr", "RR"])
    with pytest.raises(MetricError, match="no metrics"):
        ragmeter.evaluate(ROWS, "")
    with pytest.raises(MetricError, match="expected a metric name"):
        ragmeter.evaluate(ROWS, [42])  # type: ignore[list-item]


def test_sync_evaluate_works_inside_a_running_loop() -> None:
    async def notebook_cell() -> list[float | None]:
        return ragmeter.evaluate(ROWS, "mrr").scores("mrr")

    assert asyncio.run(notebook_cell()) == [0.5, 1.0, 0.0]


def test_evaluation_metric_is_generic_base() -> None:
    assert issubclass(RetrieverEvaluationMetric, EvaluationMetric)
    assert issubclass(LLMEvaluationMetric, EvaluationMetric)


class ScriptedJudge:
    """Stands in for an LLM: answers each prompt from a fixed script."""

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies
        self.prompts: list[str] = []

    async def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return next(reply for key, reply in self.replies.items() if key in prompt)


class ZeroToFive(LLMEvaluationMetric):
    """A DB-GPT-style 0-5 judged metric: first line the score, the rest feedback."""

    prompt_template = "Q: {query}\nC: {context}\nA: {answer}\nScore 0-5."

    def _parse_evaluate_response(self, response: str) -> Any:
        first, _, rest = response.partition("\n")
        return float(first), rest.strip()


def test_llm_metric_subclass_as_the_seed_describes() -> None:
    judge = ScriptedJudge({"Q: q1": "4.0\nRelevant and detailed.", "Q: q2": "not a number"})
    rows = [
        {"query": "q1", "answer": "a1", "contexts": ["c1", "c2"]},
        {"query": "q2", "answer": "a2"},
    ]
    report = ragmeter.evaluate(rows, [ZeroToFive()], judge=judge)
    assert report.scores("ZeroToFive")[0] == 4.0
    assert report.results("ZeroToFive")[0].feedback == "Relevant and detailed."
    assert judge.prompts[0] == "Q: q1\nC: c1\nc2\nA: a1\nScore 0-5."
    failed = report.results("ZeroToFive")[1]
    assert failed.score is None
    assert failed.error is not None
    assert "ValueError" in failed.error


def test_reused_llm_metric_takes_each_evaluations_judge() -> None:
    metric = ZeroToFive()
    rows = [{"query": "q1", "answer": "a1"}]
    first = ragmeter.evaluate(rows, [metric], judge=ScriptedJudge({"Q: q1": "2\nmeh"}))
    second = ragmeter.evaluate(rows, [metric], judge=ScriptedJudge({"Q: q1": "5\ngreat"}))
    assert first.scores("ZeroToFive") == [2.0]
    assert second.scores("ZeroToFive") == [5.0]
    assert metric.judge is None
