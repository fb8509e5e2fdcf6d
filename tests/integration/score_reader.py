"""Production scores as monitors and alert rules read them, kept in the real trace store of
the test's store (SQLite or PostgreSQL): ``hour`` stores a trace per value (a root span
starting at the value's time, as the receiver would keep it) and that trace's score of each
metric; calling it reads them back through ``TraceStore.read_scores`` (the server's
``ScoreReader``), noting each ask."""

from __future__ import annotations

import itertools

import numpy as np

from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.storage.traces import TraceStore
from ragmeter.store.db import Store
from ragmeter.traces import SpanRecord, TraceScore

HOUR_NS = 3_600 * 10**9
NOW = 1_800_000_000 * 10**9
#: trace numbers, unique across the tests of one process (the store may be shared)
_NUMBERS = itertools.count(1)


class Scores:
    """Scores of ``metrics`` in the trace store, one hour of them at a time; a
    ``ScoreReader`` (metric, since, until) -> (times, values) over them. ``store``: the
    test's (default: the home's)."""

    def __init__(
        self, store: Store | None = None, metrics: tuple[str, ...] = ("faithfulness", "m")
    ) -> None:
        self.metrics = metrics
        self.traces = TraceStore(store or KnowledgeBase().store)
        self.asked: list[tuple[str, int, int]] = []
        #: every value written and its time, in the order written (what the store must give)
        self.times = np.empty(0, dtype=np.int64)
        self.values = np.empty(0)

    def hour(self, end_ns: int, values: np.ndarray) -> None:
        """``values`` spread evenly over the hour before ``end_ns`` (NaN: a null score)."""
        steps = np.arange(len(values), dtype=np.int64) * ((HOUR_NS - 2) // max(len(values), 1))
        times = end_ns - HOUR_NS + 1 + steps
        spans, scores = [], []
        for start, value in zip(times.tolist(), values.tolist(), strict=True):
            trace_id = f"{next(_NUMBERS):032x}"
            spans.append(
                SpanRecord(
                    trace_id=trace_id, span_id=f"{1:016x}", parent_id=None, name="answer",
                    kind="CHAIN", start_ns=start, end_ns=start + 1_000, status="ok",
                    attributes={"input.value": "q", "output.value": "a"},
                )
            )  # fmt: skip
            score = None if value != value else float(value)
            reason = "no statement to check" if score is None else None
            scores += [
                TraceScore(trace_id, m, score, "monitor", reason=reason) for m in self.metrics
            ]
        self.traces.add_spans(spans)
        self.traces.put_scores(scores)
        self.times = np.concatenate([self.times, times])
        self.values = np.concatenate([self.values, values])

    def __call__(self, metric: str, since: int, until: int) -> tuple[np.ndarray, np.ndarray]:
        self.asked.append((metric, since, until))
        times, values = self.traces.read_scores(metric, since, until)
        return np.asarray(times), np.asarray(values)
