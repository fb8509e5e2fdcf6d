"""DB-GPT's agent metrics by their DB-GPT names: IntentMetric (an intent-recognition
agent) and AppLinkMetric (an agent that routes to an app). The prediction is the agent's
response, a JSON object; the contexts are the row's expected values (DB-GPT's ``contexts``,
read as ``retrieved_contexts``, else ``reference_contexts``)::

    score = 1 if json(response)[key] is one of the contexts, else 0

with ``key`` = ``intent`` or ``app_name``. As in DB-GPT, a response that is not a JSON
object scores 0 (DB-GPT's IntentMetric fails on it; here it scores 0 with the reason), and
``passing`` is False only for an empty response."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from ragmeter.datasets import Dataset, Row
from ragmeter.errors import ErrorKind
from ragmeter.metrics.base import BaseEvaluationResult, EvaluationMetric, overrides
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.reports.columns import ResultColumns

__all__ = ["AppLinkMetric", "IntentMetric", "JsonFieldMetric"]

NO_RESPONSE = "the row has no response: the agent's JSON answer (field 'response') is needed"
NO_CONTEXTS = (
    "the row has no contexts: the expected values (field 'retrieved_contexts', DB-GPT's "
    "'contexts', or 'reference_contexts') are needed"
)


class JsonFieldMetric(EvaluationMetric[str, str]):
    """1 if the response's JSON field ``key`` is one of the contexts, else 0."""

    scale = (0.0, 1.0)

    key: ClassVar[str]

    def missing_fields(self, row: Row) -> str | None:
        if row.response is None:
            return "response"
        if row.retrieved_contexts is None and row.reference_contexts is None:
            return "retrieved_contexts (or reference_contexts)"
        return None

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        no_contexts = rows.lacking("retrieved_contexts") & rows.lacking("reference_contexts")
        mask: np.ndarray = rows.lacking("response") | no_contexts
        return mask

    def row_inputs(self, row: Row, ctx: EvaluationContext) -> tuple[Any, Any, str | None]:
        contexts = row.retrieved_contexts
        if contexts is None:
            contexts = row.reference_contexts
        return row.response, contexts, row.query

    def score_response(self, prediction: str, contexts: Sequence[str]) -> BaseEvaluationResult:
        """Score one response against its contexts."""
        if not prediction:
            return BaseEvaluationResult(
                prediction=prediction,
                contexts=contexts,
                score=0.0,
                passing=False,
                feedback="the response is empty",
            )
        try:
            parsed = json.loads(prediction)
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply to read" if isinstance(exc, RecursionError) else exc
            return BaseEvaluationResult(
                prediction=prediction,
                contexts=contexts,
                score=0.0,
                passing=True,
                feedback=f"the response is not JSON ({why})",
            )
        if not isinstance(parsed, dict):
            return BaseEvaluationResult(
                prediction=prediction,
                contexts=contexts,
                score=0.0,
                passing=True,
                feedback=f"the response is JSON but not an object ({type(parsed).__name__})",
            )
        value = parsed.get(self.key)
        hit = isinstance(value, str) and value in contexts
        return BaseEvaluationResult(
            prediction=value if isinstance(value, str) else prediction,
            contexts=contexts,
            score=1.0 if hit else 0.0,
            passing=True,
            feedback=None if hit else f"{self.key} {value!r} is not among the contexts",
        )

    def sync_compute(
        self,
        prediction: str | None,
        contexts: Sequence[str] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        if prediction is None:
            return BaseEvaluationResult(prediction=None, score=None, feedback=NO_RESPONSE)
        if contexts is None:
            return BaseEvaluationResult(prediction=prediction, score=None, feedback=NO_CONTEXTS)
        return self.score_response(prediction, list(contexts))

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        """All rows in one pass (no judge, no thread per row)."""
        if overrides(self, JsonFieldMetric, "sync_compute") or overrides(
            self, EvaluationMetric, "compute"
        ):
            return await super().compute_rows(rows, ctx)
        table = Dataset.of(rows)
        results = ResultColumns.empty(self.metric_name, len(table))
        responses = table.column("response")
        found = table.column("retrieved_contexts")
        fallback = table.column("reference_contexts")
        for index, response in enumerate(responses):
            contexts = found[index] if found[index] is not None else fallback[index]
            reason: tuple[str, ErrorKind] | None = None
            if response is None:
                reason = (NO_RESPONSE, "input")
            elif contexts is None:
                reason = (NO_CONTEXTS, "input")
            if reason is not None:
                results.fail(index, *reason)
                continue
            result = self.score_response(response, contexts)
            results.put(
                index,
                result.score,
                passing=result.passing,
                feedback=result.feedback,
                prediction=result.prediction,
                contexts=contexts,
            )
        ctx.advance(len(table))
        return results


@register_metric("IntentMetric", aliases=("intent",))
class IntentMetric(JsonFieldMetric):
    """DB-GPT's IntentMetric: 1 if the response's JSON ``intent`` is one of the contexts."""

    key = "intent"


@register_metric("AppLinkMetric", aliases=("app_link",))
class AppLinkMetric(JsonFieldMetric):
    """DB-GPT's AppLinkMetric: 1 if the response's JSON ``app_name`` is one of the contexts."""

    key = "app_name"
