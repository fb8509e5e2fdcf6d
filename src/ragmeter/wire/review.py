"""Review queues and one reviewer's labels as the API takes and answers them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ReviewCreate",
    "ReviewItem",
    "ReviewQueueInfo",
    "ReviewQueueItems",
    "ReviewerProgress",
    "RowLabel",
    "RowLabelIn",
]

Rule = Literal["random", "stratified", "disagreement", "threshold", "failures"]
#: a user's or a metric's name
Name = Field(min_length=1, max_length=200)


class ReviewCreate(BaseModel):
    """A queue to make: rows of ``metric`` picked by ``rule``, ``count`` per reviewer, each
    row shown to ``k`` of the ``reviewers`` (user names; none: the caller), drawn with
    ``seed``; ``threshold``: the pass threshold of the ``threshold`` rule (else read from the
    run's verdicts); ``strata``: score bins of ``stratified``. The caps (``MAX_COUNT``,
    ``MAX_REVIEWERS``, ``MAX_K``, ``MAX_STRATA``) are answered 422 naming the one passed."""

    metric: str = Name
    rule: Rule = "random"
    count: int = 20
    reviewers: list[str] | None = Field(default=None, max_length=1000)
    k: int = 1
    seed: int = Field(default=0, ge=0, le=2**32 - 1)
    threshold: float | None = Field(default=None, allow_inf_nan=False)
    strata: int = 5


class ReviewerProgress(BaseModel):
    """How far one reviewer is: rows labelled on the queue's metric of the rows given."""

    reviewer: str
    labelled: int
    assigned: int


class ReviewQueueInfo(BaseModel):
    """A queue: what picked its rows (``options``), how many rows the rule could pick
    (``eligible``) and picked (``rows``), the metric's scale (``[low, high]``, null when
    unknown) and each reviewer's progress."""

    id: int
    run_id: str
    metric: str
    rule: Rule
    options: dict[str, Any]
    eligible: int
    rows: int
    scale: list[float | None] | None
    created_by: str | None
    created_at: datetime | None
    progress: list[ReviewerProgress]


class ReviewItem(BaseModel):
    """A row of the caller's list: its place, the chance the rule picked it (for weighing
    labels), its score stratum, and the caller's label of it (``done``)."""

    row_index: int
    position: int
    probability: float
    stratum: int | None
    done: bool
    value: float | None


class ReviewQueueItems(BaseModel):
    """The caller's rows of a queue in order."""

    queue: ReviewQueueInfo
    reviewer: str
    items: list[ReviewItem]


class RowLabelIn(BaseModel):
    """The caller's label of one row on ``metric``: ``value`` on the metric's scale (1/0 for
    pass/fail) and a comment. No other field: the reviewer is always the caller, so a body
    naming one is refused (422), never taken."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Name
    value: float = Field(allow_inf_nan=False)
    comment: str = Field(default="", max_length=2000)


class RowLabel(BaseModel):
    """A label of one row (the caller's own)."""

    row_index: int
    metric: str
    reviewer: str
    value: float
    comment: str
    updated_at: datetime | None
