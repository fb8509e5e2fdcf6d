"""Checks that need no reference, so online rules can score every production trace at no
judge cost (a trace has no reference answer, ids or tool calls)::

    answered = 1 if the response holds a letter or a digit (any script), else 0

An empty, blank or punctuation-only answer is a production failure worth a line of its own
on a monitor; a row with no response field at all scores null (input)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ragmeter.datasets import Dataset, Row
from ragmeter.metrics.base import BaseEvaluationResult, EvaluationMetric, overrides
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.reports.columns import ResultColumns

__all__ = ["AnsweredMetric"]

NO_RESPONSE = "the row has no response (field 'response') to check"


def _answered(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


@register_metric("answered", aliases=("AnsweredMetric",))
class AnsweredMetric(EvaluationMetric[str, str]):
    """Answered = 1 if the response holds a letter or a digit (any script), else 0; needs no
    reference or judge."""

    scale = (0.0, 1.0)

    def missing_fields(self, row: Row) -> str | None:
        return "response" if row.response is None else None

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        mask: np.ndarray = rows.lacking("response")
        return mask

    def row_inputs(self, row: Row, ctx: EvaluationContext) -> tuple[Any, Any, str | None]:
        return row.response, None, row.query

    def sync_compute(
        self, prediction: str | None, contexts: Any = None, query: str | None = None
    ) -> BaseEvaluationResult:
        if prediction is None:
            return BaseEvaluationResult(prediction=None, score=None, feedback=NO_RESPONSE)
        hit = _answered(prediction)
        return BaseEvaluationResult(
            prediction=prediction,
            score=1.0 if hit else 0.0,
            passing=hit,
            feedback=None if hit else "the response holds no letter or digit",
        )

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        """All rows in one pass (no judge, no thread per row)."""
        if overrides(self, AnsweredMetric, "sync_compute") or overrides(
            self, EvaluationMetric, "compute"
        ):
            return await super().compute_rows(rows, ctx)
        table = Dataset.of(rows)
        results = ResultColumns.empty(self.metric_name, len(table))
        for index, response in enumerate(table.column("response")):
            if response is None:
                results.fail(index, NO_RESPONSE, "input")
                continue
            hit = _answered(response)
            feedback = None if hit else "the response holds no letter or digit"
            results.put(index, 1.0 if hit else 0.0, passing=hit, feedback=feedback)
        ctx.advance(len(table))
        return results
