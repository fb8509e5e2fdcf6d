"""Production traces as the API lists them (``/api/v2/serve/traces``), shared with the client.
Times are Unix epoch nanoseconds, as the app's spans carry them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FLAG_LABELS",
    "MAX_FLAG_NOTE",
    "FlagLabel",
    "SpanOut",
    "TraceDetailOut",
    "TraceFlagIn",
    "TraceFlagOut",
    "TraceOut",
    "TraceScoreOut",
    "TracesDatasetIn",
    "TracesDatasetOut",
    "TracesFilterIn",
    "TracesQuery",
]

#: a trace id as OTLP writes it
TRACE_ID = r"^[0-9a-f]{32}$"

#: what a reviewer's flag on a trace says (the note says why)
FlagLabel = Literal["wrong", "good_example", "needs_review", "other"]
FLAG_LABELS: tuple[str, ...] = get_args(FlagLabel)
#: characters of a flag's note
MAX_FLAG_NOTE = 2000


class TraceScoreOut(BaseModel):
    """One metric's score of a trace (null with its ``reason``); ``feedback`` is the judge's
    reasoning."""

    metric: str
    rule: str | None = None
    score: float | None = None
    passing: bool | None = None
    reason: str | None = None
    error_kind: str | None = None
    feedback: str | None = None
    judge_model: str | None = None
    tokens: int = 0
    scored_ns: int = 0


class TraceOut(BaseModel):
    """A trace summed up as one row of our fields, with what it cost and its scores.
    ``seq`` grows with every change of a trace."""

    trace_id: str
    name: str
    service: str | None = None
    start_ns: int
    end_ns: int
    latency_ms: float
    status: str
    complete: bool
    row: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    session_id: str | None = None
    user_id: str | None = None
    span_count: int = 0
    seq: int = 0
    received_at: datetime | None = None
    updated_at: datetime | None = None
    scores: list[TraceScoreOut] = Field(default_factory=list)
    #: how many people flagged the trace, and their labels (sorted, once each)
    flags: int = 0
    flag_labels: list[str] = Field(default_factory=list)


class SpanOut(BaseModel):
    """One span of a trace; ``depth`` is its place in the tree (0: a root, or a span whose
    parent never arrived), the spans listed in tree order."""

    span_id: str
    parent_id: str | None = None
    depth: int = 0
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status: str
    status_message: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    resource: dict[str, Any] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(default_factory=list)


class TraceFlagIn(BaseModel):
    """The caller's flag on a trace (a new one replaces theirs): a label and why."""

    model_config = ConfigDict(extra="forbid")

    label: FlagLabel
    note: str | None = Field(default=None, max_length=MAX_FLAG_NOTE)


class TraceFlagOut(BaseModel):
    """One person's flag on a trace."""

    trace_id: str
    user: str
    label: str
    note: str | None = None
    created_at: datetime | None = None


class TraceDetailOut(BaseModel):
    trace: TraceOut
    spans: list[SpanOut] = Field(default_factory=list)
    #: who flagged the trace, oldest first
    flags: list[TraceFlagOut] = Field(default_factory=list)


class TracesQuery(BaseModel):
    """Which traces: the filters of the list (query parameters), also those a dataset is
    made of."""

    service: str | None = Field(default=None, max_length=200)
    name: str | None = Field(default=None, max_length=500)
    status: str | None = Field(default=None, pattern="^(ok|error|unset)$")
    complete: bool | None = None
    since_ns: int | None = Field(default=None, ge=0, le=2**63 - 1)
    until_ns: int | None = Field(default=None, ge=0, le=2**63 - 1)
    metric: str | None = Field(default=None, max_length=200)
    below: float | None = Field(default=None, allow_inf_nan=False)
    text: str | None = Field(default=None, max_length=500)
    session_id: str | None = Field(default=None, max_length=200)
    user_id: str | None = Field(default=None, max_length=200)
    #: flagged by anyone (True) or by no one (False); ``flag``: flagged with that label
    flagged: bool | None = None
    flag: FlagLabel | None = None


class TracesFilterIn(TracesQuery):
    """The filters in a request body: a key it does not know is refused."""

    model_config = ConfigDict(extra="forbid")


class TracesDatasetIn(BaseModel):
    """Save traces as dataset ``name``'s next version: those named (``trace_ids``), or those
    ``filters`` takes (oldest first, at most ``limit``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    trace_ids: list[Annotated[str, Field(pattern=TRACE_ID)]] | None = Field(
        default=None, min_length=1, max_length=10_000
    )
    filters: TracesFilterIn | None = None
    limit: int = Field(default=1000, ge=1, le=10_000)


class TracesDatasetOut(BaseModel):
    """The dataset version the traces were saved as (``reused``: a version held the same
    rows already) and how many rows it has."""

    name: str
    version: int
    dataset_id: int
    content_hash: str | None = None
    rows: int
    reused: bool = False
