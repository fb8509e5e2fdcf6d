"""PLACEHOLDER, replaced by the OpenInference / OTel GenAI mapping (``trace_of``) of the
OTLP receiver's part: the smallest ``trace_of`` the trace store is built against. The query
is the root span's ``input.value``, the response its ``output.value``; a trace is complete
once its root span has arrived."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.traces.records import SpanRecord, TraceRecord

__all__ = ["trace_of"]


def trace_of(spans: Sequence[SpanRecord]) -> TraceRecord:
    """The trace ``spans`` (all of one trace, at least one) sum up to."""
    root = next((s for s in spans if s.parent_id is None), None)
    row: dict[str, Any] = {}
    if root is not None:
        for field, key in (("query", "input.value"), ("response", "output.value")):
            value = root.attributes.get(key)
            if isinstance(value, str):
                row[field] = value
    first = root or min(spans, key=lambda s: s.start_ns)
    return TraceRecord(
        trace_id=first.trace_id,
        name=root.name if root is not None else "",
        service=first.service,
        start_ns=min(s.start_ns for s in spans),
        end_ns=max(s.end_ns for s in spans),
        status="error" if any(s.status == "error" for s in spans) else first.status,
        complete=root is not None,
        row=row,
        span_count=len(spans),
    )
