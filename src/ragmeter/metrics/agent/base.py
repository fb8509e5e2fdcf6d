"""The base of the deterministic agent metrics: a row's actual calls (every tool call the
assistant made in ``messages``) against its expected calls (``reference_tool_calls``),
scored for all rows in one pass over the columns, with no judge."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ragmeter.datasets import Dataset, LazyColumn, Row
from ragmeter.datasets.agent import ToolCall, plain_items, read_tool_calls, tool_calls_of
from ragmeter.errors import ErrorKind
from ragmeter.metrics.base import BaseEvaluationResult, EvaluationMetric, overrides
from ragmeter.metrics.context import EvaluationContext
from ragmeter.reports.columns import ResultColumns

__all__ = [
    "NO_MESSAGES",
    "NO_REFERENCE_CALLS",
    "Outcome",
    "ToolCallMetric",
    "calls_of_rows",
    "lacking_calls",
]

#: why a row without ``messages`` has no score
NO_MESSAGES = "the row has no messages: the agent's conversation (field 'messages') is needed"
#: why a row without ``reference_tool_calls`` has no score
NO_REFERENCE_CALLS = (
    "the row has no reference_tool_calls: the expected calls "
    "(field 'reference_tool_calls') are needed"
)

#: a row's score and feedback; a None score needs its reason as feedback
Outcome = tuple[float | None, str | None]


Calls = Sequence[ToolCall]


def calls_of_rows(
    table: Dataset, ctx: EvaluationContext | None = None
) -> tuple[list[Calls | None], list[Calls | None]]:
    """Every row's actual and expected calls (None where the row lacks the field), read
    once per evaluation and shared by the agent metrics."""

    def read() -> tuple[list[Calls | None], list[Calls | None]]:
        actual: list[Calls | None] = [
            None if messages is None else tuple(tool_calls_of(messages))
            for messages in table.column("messages")
        ]
        return actual, list(table.column("reference_tool_calls"))

    if ctx is None:
        return read()
    # the table is kept with its calls, so a later table at the same address is read anew
    owner, found = ctx.shared(("agent_calls", id(table)), lambda: (table, read()))
    return found if owner is table else read()


def _as_calls(value: Any) -> list[ToolCall]:
    """Calls given to ``sync_compute``: ``ToolCall`` objects or any shape the readers take."""
    if value is None:
        return []
    items = list(value)
    if all(isinstance(item, ToolCall) for item in items):
        return items
    return list(read_tool_calls(items))


class ToolCallMetric(EvaluationMetric[list[ToolCall], list[ToolCall]]):
    """A metric of actual against expected tool calls. ``prediction`` is the actual calls
    (in order), ``contexts`` the expected ones. Subclasses implement ``score_calls``.

    A row without ``messages`` or ``reference_tool_calls`` stops the evaluation before any
    work with an error naming the row and the field, as every metric's missing input does."""

    scale = (0.0, 1.0)

    def score_calls(self, actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> Outcome:
        """(score, feedback) of one row's calls."""
        raise NotImplementedError

    def missing_fields(self, row: Row) -> str | None:
        if row.messages is None:
            return "messages"
        return "reference_tool_calls" if row.reference_tool_calls is None else None

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        mask: np.ndarray = rows.lacking("messages") | rows.lacking("reference_tool_calls")
        return mask

    def row_inputs(self, row: Row, ctx: EvaluationContext) -> tuple[Any, Any, str | None]:
        actual = None if row.messages is None else tool_calls_of(row.messages)
        expected = None if row.reference_tool_calls is None else list(row.reference_tool_calls)
        return actual, expected, row.query

    def sync_compute(
        self,
        prediction: list[ToolCall] | None,
        contexts: Sequence[list[ToolCall]] | Sequence[ToolCall] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        """One row: ``prediction`` the actual calls, ``contexts`` the expected calls (either
        as ``ToolCall`` objects or in any shape ``read_tool_calls`` reads)."""
        if prediction is None:
            return BaseEvaluationResult(prediction=prediction, score=None, feedback=NO_MESSAGES)
        if contexts is None:
            return BaseEvaluationResult(
                prediction=prediction, score=None, feedback=NO_REFERENCE_CALLS
            )
        score, feedback = self.score_calls(_as_calls(prediction), _as_calls(contexts))
        return BaseEvaluationResult(
            prediction=prediction, contexts=contexts, score=score, feedback=feedback
        )

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        """All rows in one pass; a user subclass overriding a scoring method is called per
        row."""
        if overrides(self, ToolCallMetric, "sync_compute") or overrides(
            self, EvaluationMetric, "compute"
        ):
            return await super().compute_rows(rows, ctx)
        table = Dataset.of(rows)
        actual, expected = calls_of_rows(table, ctx)
        scores, errors, feedback = self._score_rows(actual, expected)
        ctx.advance(len(table))
        return ResultColumns(
            self.metric_name,
            scores,
            errors=errors,
            feedback=feedback,
            prediction=LazyColumn(len(table), lambda i: _plain(actual[i])),
            contexts=LazyColumn(len(table), lambda i: _plain(expected[i])),
        )

    def _score_rows(
        self,
        actual: Sequence[Sequence[ToolCall] | None],
        expected: Sequence[Sequence[ToolCall] | None],
    ) -> tuple[np.ndarray, dict[int, tuple[str, ErrorKind]], dict[int, str]]:
        """Every row's score, the reasons of its nulls and its feedback (a subclass may score
        all rows at once instead of one by one)."""
        scores = np.full(len(actual), np.nan)
        errors = lacking_calls(actual, expected)
        feedback: dict[int, str] = {}
        score_calls = self.score_calls
        for index, (done, wanted) in enumerate(zip(actual, expected, strict=True)):
            if done is None or wanted is None:
                continue
            score, said = score_calls(done, wanted)
            if score is None:
                errors[index] = (said or "the metric gave no score", "input")
                continue
            scores[index] = score
            if said is not None:
                feedback[index] = said
        return scores, errors, feedback


def lacking_calls(
    actual: Sequence[Sequence[ToolCall] | None], expected: Sequence[Sequence[ToolCall] | None]
) -> dict[int, tuple[str, ErrorKind]]:
    """Why the rows without actual or expected calls have no score."""
    errors: dict[int, tuple[str, ErrorKind]] = {}
    if None in actual:
        errors.update((i, (NO_MESSAGES, "input")) for i, a in enumerate(actual) if a is None)
    if None in expected:
        errors.update(
            (i, (NO_REFERENCE_CALLS, "input"))
            for i, (a, e) in enumerate(zip(actual, expected, strict=True))
            if e is None and a is not None
        )
    return errors


def _plain(calls: Sequence[ToolCall] | None) -> list[dict[str, Any]] | None:
    return None if calls is None else plain_items(calls)
