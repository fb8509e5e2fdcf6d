"""Traces held in memory as a ``TraceSource`` (the server's background scorer runs over any
source), and ``score_traces``: online rules applied now to traces given in Python or read
from a file, without a service or a trace store."""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterable, Sequence

from ragmeter._sync import run_sync
from ragmeter.config import OnlineRule, Settings
from ragmeter.runs.online.source import Cursor, PendingTrace
from ragmeter.traces import SpanRecord, TraceRecord, TraceScore

__all__ = ["MemoryTraces", "ascore_traces", "score_traces"]


class MemoryTraces:
    """Traces and their scores in memory. ``add`` stamps a trace with the time it was added
    (or ``updated_ns``); only complete traces are handed out. A trace added again (late
    spans) replaces the older one and is handed out again."""

    def __init__(self) -> None:
        self._pending: list[PendingTrace] = []  # in cursor order
        self._scores: dict[tuple[str, str | None, str], TraceScore] = {}
        self._lock = threading.Lock()

    def add(
        self,
        trace: TraceRecord,
        spans: Iterable[SpanRecord] = (),
        updated_ns: int | None = None,
    ) -> None:
        stamp = time.time_ns() if updated_ns is None else updated_ns
        item = PendingTrace(trace, tuple(spans), stamp)
        with self._lock:
            self._pending = [p for p in self._pending if p.trace.trace_id != trace.trace_id]
            bisect.insort(self._pending, item, key=lambda p: p.cursor)

    def complete_since(self, after: Cursor, until_ns: int, limit: int) -> list[PendingTrace]:
        with self._lock:
            start = bisect.bisect_right(self._pending, after, key=lambda p: p.cursor)
            found: list[PendingTrace] = []
            for item in self._pending[start:]:
                if item.updated_ns > until_ns or len(found) >= limit:
                    break
                if item.trace.complete:
                    found.append(item)
            return found

    def put_scores(self, scores: Sequence[TraceScore]) -> None:
        with self._lock:
            for score in scores:
                self._scores[(score.trace_id, score.rule, score.metric)] = score

    def scores(self, trace_id: str | None = None) -> list[TraceScore]:
        """The scores kept (of one trace), by trace, rule and metric."""
        with self._lock:
            found = sorted(
                self._scores.items(), key=lambda item: (item[0][0], item[0][1] or "", item[0][2])
            )
        return [s for _, s in found if trace_id is None or s.trace_id == trace_id]


async def ascore_traces(
    traces: Iterable[TraceRecord | PendingTrace],
    rules: Iterable[OnlineRule],
    settings: Settings | None = None,
) -> list[TraceScore]:
    """Score ``traces`` (records, or with their spans as ``PendingTrace``) by ``rules`` now,
    as the server's background scorer would (no delay, no cursor): every matching trace by
    each enabled rule's deterministic metrics, the sampled ones by its judged metrics within
    its daily budget, counted in the store of ``settings`` (default: ragmeter.toml's)."""
    from ragmeter.config import load_settings
    from ragmeter.runs.online.budget import BudgetLedger
    from ragmeter.runs.online.matching import matches
    from ragmeter.runs.online.scorer import RuleScorer
    from ragmeter.store.db import open_store

    settings = settings or load_settings()
    ledger = BudgetLedger(open_store(settings.store_url()))
    items = [t if isinstance(t, PendingTrace) else PendingTrace(t, (), 0) for t in traces]
    scores: list[TraceScore] = []
    for rule in rules:
        if not rule.enabled:
            continue
        scorer = RuleScorer(rule, settings, ledger)
        try:
            taken = [p.trace for p in items if matches(rule, p.trace, p.spans)]
            scores.extend(await scorer.score(taken) if taken else [])
        finally:
            await scorer.aclose()
    return scores


def score_traces(
    traces: Iterable[TraceRecord | PendingTrace],
    rules: Iterable[OnlineRule],
    settings: Settings | None = None,
) -> list[TraceScore]:
    """Blocking form of ``ascore_traces``."""
    return run_sync(ascore_traces(traces, rules, settings))
