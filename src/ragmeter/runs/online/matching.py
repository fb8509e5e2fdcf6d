"""Which traces an online rule takes (``matches``) and which of them its judged metrics
score (``sampled``: a hash of the trace id, so every replica and every re-run agrees)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

from ragmeter.config import OnlineRule, TraceFilter
from ragmeter.traces import SpanRecord, TraceRecord

__all__ = ["TRACE_FIELDS", "field_problem", "matches", "sample_point", "sampled"]

#: a trace's own fields a filter may name without a prefix
TRACE_FIELDS = frozenset(
    {
        "service",
        "name",
        "status",
        "model",
        "user_id",
        "session_id",
        "latency_ms",
        "input_tokens",
        "output_tokens",
    }
)
#: prefixes of the other fields a filter may name
PREFIXES = ("row.", "metadata.", "span.", "resource.")
_MISSING = object()


def field_problem(field: str) -> str | None:
    """Why a filter's ``field`` is not one a trace has (None: it is)."""
    if field in TRACE_FIELDS or any(field.startswith(p) and field > p for p in PREFIXES):
        return None
    known = ", ".join(sorted(TRACE_FIELDS))
    return (
        f"unknown filter field '{field}': use one of {known}, or row.FIELD, metadata.KEY, "
        "span.ATTRIBUTE or resource.ATTRIBUTE"
    )


def _values(field: str, trace: TraceRecord, spans: Sequence[SpanRecord]) -> Iterator[Any]:
    """The values ``field`` has in the trace: one for a trace, row or metadata field (none
    when absent), one per span that has the attribute for ``span.``/``resource.``."""
    if field in TRACE_FIELDS:
        value = getattr(trace, field)
        if value is not None:
            yield value
    elif field.startswith("row."):
        value = trace.row.get(field[4:], _MISSING)
        if value is not _MISSING:
            yield value
    elif field.startswith("metadata."):
        metadata = trace.row.get("metadata")
        if isinstance(metadata, dict) and field[9:] in metadata:
            yield metadata[field[9:]]
    else:
        key, part = (
            (field[5:], "attributes") if field.startswith("span.") else (field[9:], "resource")
        )
        for span in spans:
            found = getattr(span, part)
            if key in found:
                yield found[key]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _holds(condition: TraceFilter, value: Any) -> bool:
    op, wanted = condition.op, condition.value
    if op == "exists":
        return True
    if op == "eq":
        return bool(value == wanted)
    if op == "ne":
        return bool(value != wanted)
    if op == "in":
        return isinstance(wanted, list) and value in wanted
    if op == "contains":
        if isinstance(value, str):
            return isinstance(wanted, str) and wanted in value
        return isinstance(value, list | tuple) and wanted in value
    got, bound = _number(value), _number(wanted)
    if got is None or bound is None:
        return False
    return {"gt": got > bound, "ge": got >= bound, "lt": got < bound, "le": got <= bound}[op]


def _passes(condition: TraceFilter, trace: TraceRecord, spans: Sequence[SpanRecord]) -> bool:
    """Whether some value of the field satisfies the condition; ``ne`` holds when none is
    equal (a trace without the field is "not equal")."""
    values = list(_values(condition.field, trace, spans))
    if condition.op == "ne":
        return all(_holds(condition, v) for v in values)
    return any(_holds(condition, v) for v in values)


def matches(rule: OnlineRule, trace: TraceRecord, spans: Sequence[SpanRecord]) -> bool:
    """Whether ``rule`` takes ``trace`` (with its ``spans``): every condition it sets holds.
    ``span_kind`` is compared without case (``LLM`` and ``llm`` are one kind)."""
    if rule.service is not None and trace.service != rule.service:
        return False
    if rule.root_name is not None and trace.name != rule.root_name:
        return False
    if rule.span_kind is not None:
        kind = rule.span_kind.lower()
        if not any(span.kind.lower() == kind for span in spans):
            return False
    return all(_passes(f, trace, spans) for f in rule.filters)


def sample_point(trace_id: str) -> float:
    """Where a trace falls in [0, 1): the first 8 bytes of the SHA-256 of its id. The same
    for every process and every rule, so a rule at 10% scores a subset of one at 20%."""
    digest = hashlib.sha256(trace_id.lower().encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def sampled(rate: float, trace_id: str) -> bool:
    """Whether a rule at ``rate`` judges the trace ``trace_id``."""
    return rate >= 1.0 or sample_point(trace_id) < rate
