"""Where online rules read traces from and write their scores to: the trace store of the
service, or ``MemoryTraces`` (traces given in Python, or read from a file)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from ragmeter.traces import SpanRecord, TraceRecord, TraceScore

__all__ = ["Cursor", "PendingTrace", "TraceSource"]


class Cursor(NamedTuple):
    """A place in the order traces are taken in: by the time the source last changed them
    (a span arrived; Unix epoch ns), then by id. A rule's cursor is the last trace it took."""

    updated_ns: int = 0
    trace_id: str = ""


@dataclass(frozen=True)
class PendingTrace:
    """A complete trace, with its spans and when the source last changed it."""

    trace: TraceRecord
    spans: tuple[SpanRecord, ...]
    updated_ns: int

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.updated_ns, self.trace.trace_id)


class TraceSource(Protocol):
    """Complete traces in cursor order, and a place for their scores."""

    def complete_since(self, after: Cursor, until_ns: int, limit: int) -> list[PendingTrace]:
        """Up to ``limit`` complete traces past ``after`` that last changed at or before
        ``until_ns``, in cursor order."""
        ...

    def put_scores(self, scores: Sequence[TraceScore]) -> None:
        """Keep ``scores`` (a trace's score by a rule and metric replaces an older one)."""
        ...
