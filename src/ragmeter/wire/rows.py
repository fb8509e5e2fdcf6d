"""A run row by row (``GET /runs/{id}/rows``, ``/runs/{id}/distribution``): each row's
scores, a row in full with its contexts and results, and each metric's distribution."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from ragmeter.wire.trajectory import Trajectory


class RowScore(BaseModel):
    score: float | None
    passing: bool | None
    error: str | None
    error_kind: str | None


class RowView(BaseModel):
    """One dataset row of a run: its query and response (cut to ``TEXT_CHARS``), and each
    metric's score or the reason it is null."""

    row_index: int
    query: str
    response: str
    scores: dict[str, RowScore]


class RowContext(BaseModel):
    """One retrieved context of a row, at ``rank`` (from 1): its text and id where the row
    has them; ``relevant`` as the exact retrieval metrics judge it, null when the row names
    no reference to judge it by."""

    rank: int
    text: str | None = None
    id: str | None = None
    relevant: bool | None = None
    #: its grade where the row grades it (``reference_relevance``); None for a row judged by
    #: ``reference_ids`` or texts alone (all of grade 1)
    grade: int | None = None


class RowResult(BaseModel):
    """One metric's result on a row, with the judge's reasoning (``details``: see
    ``ResultItem``; null when not recorded). ``judged``: a judge was asked (its usage is
    charged to the result), so null details mean "not recorded", not "nothing to show"."""

    metric_name: str
    judged: bool = False
    score: float | None
    passing: bool | None
    feedback: str | None
    error: str | None
    error_kind: str | None
    details: dict[str, Any] | None = None


class RowDetail(BaseModel):
    """One row of a run in full: query, response, reference, the retrieved contexts in rank
    order with relevance marked (``match``: by ``id`` or ``exact`` text, as the retrieval
    metrics' ``auto`` rule; null when the row has no reference ids or contexts), every
    metric's result, and the stored rows before and after it (null at either end)."""

    row_index: int
    query: str
    response: str | None
    reference: str | None
    contexts: list[RowContext]
    match: Literal["id", "exact"] | None
    relevant_total: int | None
    #: the grade from which an item counts as relevant in this run (its ``relevance_level``)
    relevance_level: int = 1
    results: list[RowResult]
    previous: int | None
    next: int | None
    #: an agent row's conversation and calls (null for a row without ``messages``)
    trajectory: Trajectory | None = None


class NullReason(BaseModel):
    error_kind: str | None
    reason: str | None
    count: int


class MetricDistribution(BaseModel):
    """Scores binned on ``edges`` (``len(counts) + 1`` of them; none when no score), and the
    null results grouped by kind and reason, ``other_nulls`` past the listed ones."""

    metric_name: str
    edges: list[float]
    counts: list[int]
    nulls: list[NullReason]
    other_nulls: int
