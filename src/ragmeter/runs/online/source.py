"""Where online rules read traces from and write their scores to: the trace store of the
service, or ``MemoryTraces`` (traces given in Python, or read from a file)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from ragmeter.traces import SpanRecord, TraceRecord, TraceScore

__all__ = ["Cursor", "PendingTrace", "TraceSource"]


class Cursor(NamedTuple):
    """A place in the order traces are taken in: the source's ``position`` of a trace's
    latest change (``MemoryTraces``: the time it was added, Unix epoch ns; the trace store:
    its change sequence, which grows in commit order), then its id. A rule's cursor is the
    last trace it took."""

    position: int = 0
    trace_id: str = ""


@dataclass(frozen=True)
class PendingTrace:
    """A complete trace, with its spans, when the source last changed it (``updated_ns``,
    Unix epoch ns: a rule's delay counts from it) and its place in the source's order
    (``position``; None: ``updated_ns`` is its place)."""

    trace: TraceRecord
    spans: tuple[SpanRecord, ...]
    updated_ns: int
    position: int | None = None

    @property
    def cursor(self) -> Cursor:
        place = self.updated_ns if self.position is None else self.position
        return Cursor(place, self.trace.trace_id)


class TraceSource(Protocol):
    """Complete traces in cursor order, and a place for their scores."""

    def complete_since(self, after: Cursor, until_ns: int, limit: int) -> list[PendingTrace]:
        """Up to ``limit`` traces past ``after`` that last changed at or before ``until_ns``,
        in cursor order. A source may hand out incomplete ones too (their spans left out):
        the scorer passes over them, and a trace completed later comes again at its new
        place."""
        ...

    def put_scores(self, scores: Sequence[TraceScore]) -> None:
        """Keep ``scores`` (a trace's score by a rule and metric replaces an older one)."""
        ...
