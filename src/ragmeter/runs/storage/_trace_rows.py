"""What the trace store reads and writes: stored rows to and from the trace records, the
SQL of a trace list's filters, and a trace's spans in tree order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exists, select

from ragmeter.store.db import json_text
from ragmeter.store.flag_models import TraceFlagRow
from ragmeter.store.trace_models import SpanRow, TraceRow, TraceScoreRow
from ragmeter.traces.records import SpanRecord, TraceRecord, TraceScore

__all__ = [
    "SPAN_COLUMNS",
    "TraceFilter",
    "filter_clauses",
    "score_of",
    "span_of",
    "span_values",
    "trace_of_row",
    "tree_order",
]

#: columns of a span written by ``insert_plain`` (JSON columns as JSON text)
SPAN_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_id",
    "name",
    "kind",
    "start_ns",
    "end_ns",
    "status",
    "status_message",
    "attributes",
    "resource",
    "events",
)


@dataclass(frozen=True)
class TraceFilter:
    """Which traces a list (or a dataset made of traces) takes; None: any. Times are Unix
    epoch nanoseconds of the trace's start; ``text`` is found in the query, any case;
    ``metric`` with ``below``: traces with a score of ``metric`` under ``below``;
    ``flagged``: flagged by anyone (True) or no one (False); ``flag``: flagged with that
    label."""

    service: str | None = None
    name: str | None = None
    status: str | None = None
    complete: bool | None = None
    since_ns: int | None = None
    until_ns: int | None = None
    metric: str | None = None
    below: float | None = None
    text: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    flagged: bool | None = None
    flag: str | None = None


def filter_clauses(found: TraceFilter) -> list[Any]:
    """SQL conditions on ``traces`` for ``found``."""
    table = TraceRow
    equal = {
        table.service: found.service,
        table.name: found.name,
        table.status: found.status,
        table.complete: found.complete,
        table.session_id: found.session_id,
        table.user_id: found.user_id,
    }
    clauses: list[Any] = [column == value for column, value in equal.items() if value is not None]
    if found.since_ns is not None:
        clauses.append(table.start_ns >= found.since_ns)
    if found.until_ns is not None:
        clauses.append(table.start_ns < found.until_ns)
    if found.text:
        clauses.append(table.query.icontains(found.text, autoescape=True))
    if found.metric is not None or found.below is not None:
        scores = TraceScoreRow
        scored = [scores.trace_id == table.trace_id]
        if found.metric is not None:
            scored.append(scores.metric == found.metric)
        if found.below is not None:
            scored.append(scores.score < found.below)
        clauses.append(exists(select(scores.id).where(*scored)))
    return clauses + _flag_clauses(found)


def _flag_clauses(found: TraceFilter) -> list[Any]:
    flags = TraceFlagRow
    clauses: list[Any] = []
    flagged = exists(select(flags.id).where(flags.trace_id == TraceRow.trace_id))
    if found.flagged is not None:
        clauses.append(flagged if found.flagged else ~flagged)
    if found.flag is not None:
        labelled = [flags.trace_id == TraceRow.trace_id, flags.label == found.flag]
        clauses.append(exists(select(flags.id).where(*labelled)))
    return clauses


#: kept among a stored span's attributes when its parent is in another process (no column
#: of its own); taken out again when the span is read
REMOTE_PARENT = "ragmeter.remote_parent"


def span_values(span: SpanRecord) -> tuple[Any, ...]:
    """``span`` as the values of ``SPAN_COLUMNS``."""
    attributes = span.attributes | {REMOTE_PARENT: True} if span.remote_parent else span.attributes
    return (
        span.trace_id,
        span.span_id,
        span.parent_id,
        span.name[:500],
        span.kind[:40],
        span.start_ns,
        span.end_ns,
        span.status[:8],
        span.status_message,
        json_text(attributes),
        json_text(span.resource),
        json_text(list(span.events)),
    )


def span_of(row: SpanRow) -> SpanRecord:
    attributes = dict(row.attributes or {})
    remote = attributes.pop(REMOTE_PARENT, None) is True
    return SpanRecord(
        trace_id=row.trace_id,
        span_id=row.span_id,
        parent_id=row.parent_id,
        name=row.name,
        kind=row.kind,
        start_ns=row.start_ns,
        end_ns=row.end_ns,
        status=row.status,
        status_message=row.status_message,
        attributes=attributes,
        resource=dict(row.resource or {}),
        events=tuple(row.events or ()),
        remote_parent=remote,
    )


def trace_of_row(row: TraceRow) -> TraceRecord:
    return TraceRecord(
        trace_id=row.trace_id,
        name=row.name,
        service=row.service,
        start_ns=row.start_ns,
        end_ns=row.end_ns,
        status=row.status,
        complete=row.complete,
        row=dict(row.row or {}),
        model=row.model,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        session_id=row.session_id,
        user_id=row.user_id,
        span_count=row.span_count,
    )


def score_of(row: TraceScoreRow) -> TraceScore:
    return TraceScore(
        trace_id=row.trace_id,
        metric=row.metric,
        score=row.score,
        rule=row.rule or None,
        passing=row.passing,
        reason=row.reason,
        error_kind=row.error_kind,
        feedback=row.feedback,
        judge_model=row.judge_model,
        tokens=row.tokens,
        scored_ns=row.scored_ns,
    )


def tree_order(spans: Iterable[SpanRecord]) -> list[tuple[int, SpanRecord]]:
    """``spans`` as (depth, span) in tree order: each root (a span without a parent, or whose
    parent never arrived) by start time, each span's children after it by start time. Walked
    with a stack, so a chain of any length is no recursion."""
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    known = {s.span_id for s in ordered}
    children: dict[str | None, list[SpanRecord]] = {}
    for span in ordered:
        parent = span.parent_id if span.parent_id in known else None
        children.setdefault(parent, []).append(span)
    out: list[tuple[int, SpanRecord]] = []
    stack: list[tuple[int, SpanRecord]] = [(0, s) for s in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        depth, span = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        out.append((depth, span))
        stack.extend((depth + 1, c) for c in reversed(children.get(span.span_id, [])))
    # a cycle of parents (a span its own ancestor) reaches no root: listed at the end
    out.extend((0, s) for s in ordered if s.span_id not in seen)
    return out


def chunks(values: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """``values`` in slices of ``size`` (IN lists of a bounded length)."""
    for start in range(0, len(values), size):
        yield values[start : start + size]
