"""Production scores of a metric as the trace store's reader gives them to monitors and
alert rules (``ScoreReader``: metric, since, until -> times, values), over arrays a test
fills an hour at a time."""

from __future__ import annotations

import numpy as np

HOUR_NS = 3_600 * 10**9
NOW = 1_800_000_000 * 10**9


class Scores:
    """Production scores of ``metric`` (None: of whichever metric is asked), one hour of
    them at a time: a reader as ``ScoreReader`` (metric, since, until) -> (times, values)."""

    def __init__(self, metric: str | None = None) -> None:
        self.metric = metric
        self.times = np.empty(0, dtype=np.int64)
        self.values = np.empty(0)
        self.asked: list[tuple[str, int, int]] = []

    def hour(self, end_ns: int, values: np.ndarray) -> None:
        """``values`` spread evenly over the hour before ``end_ns`` (whole nanoseconds: a
        float holds epoch nanoseconds to 256 ns only)."""
        steps = np.arange(len(values), dtype=np.int64) * ((HOUR_NS - 2) // max(len(values), 1))
        times = end_ns - HOUR_NS + 1 + steps
        self.times = np.concatenate([self.times, times])
        self.values = np.concatenate([self.values, values])

    def __call__(self, metric: str, since: int, until: int) -> tuple[np.ndarray, np.ndarray]:
        self.asked.append((metric, since, until))
        inside = (self.times >= since) & (self.times < until) & (self.metric in (None, metric))
        return self.times[inside], self.values[inside]
