"""The trace store as the source online rules read: traces in the order of the store's
change sequence (it grows in commit order, so a trace committed after a rule's look is never
passed over), with the spans of the complete ones, and scores written back to it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from ragmeter.runs.online.source import Cursor, PendingTrace
from ragmeter.runs.storage.traces import StoredTrace, TraceStore
from ragmeter.traces import TraceScore

__all__ = ["StoredTraces"]


def _epoch_ns(moment: datetime | None) -> int:
    """A stored (naive UTC) time as Unix epoch nanoseconds; 0 when unknown."""
    if moment is None:
        return 0
    return int(moment.replace(tzinfo=UTC).timestamp() * 1e9)


class StoredTraces:
    """Online rules' ``TraceSource`` over a ``TraceStore``."""

    def __init__(self, traces: TraceStore) -> None:
        self.traces = traces

    def complete_since(self, after: Cursor, until_ns: int, limit: int) -> list[PendingTrace]:
        """Up to ``limit`` traces changed after ``after`` and at or before ``until_ns``, in
        sequence order; incomplete ones without their spans (the scorer passes over them)."""
        ready: list[StoredTrace] = []
        for stored in self.traces.changed_after(after.position, limit):
            if _epoch_ns(stored.updated_at) > until_ns:
                break  # later changes are later still: they wait for the next look
            ready.append(stored)
        spans = self.traces.spans_of([s.record.trace_id for s in ready if s.record.complete])
        return [
            PendingTrace(
                s.record,
                tuple(spans.get(s.record.trace_id, ())),
                _epoch_ns(s.updated_at),
                position=s.seq,
            )
            for s in ready
        ]

    def put_scores(self, scores: Sequence[TraceScore]) -> None:
        self.traces.put_scores(scores)
