"""The monitor's and alert rules' reader over a real store (SQLite, then PostgreSQL): two
rules scoring the same metric on the same trace count once, as the trace's latest score of
that metric (a null only when the trace has no other), in the monitor and in alerts alike."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest

from ragmeter.runs.monitor.alerts import parse_alert, read_window
from ragmeter.runs.monitor.view import MonitorAsk, monitor
from ragmeter.runs.storage.traces import TraceStore
from ragmeter.store.db import Store
from ragmeter.traces.records import SpanRecord, TraceScore

pytestmark = pytest.mark.both_stores

SECOND = 1_000_000_000
HOUR = 3600 * SECOND
NOW = time.time_ns() // HOUR * HOUR  # the start of this hour


def _tid(n: int) -> str:
    return f"{n:032x}"


def _root(n: int, start: int) -> SpanRecord:
    return SpanRecord(
        trace_id=_tid(n), span_id=f"{n:016x}", parent_id=None, name="root", kind="CHAIN",
        start_ns=start, end_ns=start + SECOND, status="ok",
        attributes={"input.value": f"q{n}", "output.value": f"a{n}"},
        resource={"service.name": "shop"},
    )  # fmt: skip


@pytest.fixture
def traces(store_url: str) -> Iterator[TraceStore]:
    store = Store(store_url)
    try:
        yield TraceStore(store)
    finally:
        store.close()


def _score(n: int, value: float | None, rule: str, scored: int) -> TraceScore:
    return TraceScore(_tid(n), "faithfulness", value, rule=rule, scored_ns=NOW + scored)


def test_two_rules_scoring_a_trace_count_once_its_latest_score(traces: TraceStore) -> None:
    traces.add_spans([_root(n, NOW + n * SECOND) for n in range(1, 5)])
    traces.put_scores(
        [
            _score(1, 0.2, "wide", 10),
            _score(1, 0.4, "narrow", 20),  # trace 1's latest: 0.4
            _score(2, 0.9, "narrow", 10),
            _score(2, 0.5, "wide", 30),  # trace 2's latest: 0.5
            _score(3, 0.8, "wide", 10),
            _score(3, None, "narrow", 40),  # a budget skip hides no score: 0.8
            _score(4, None, "wide", 10),
            _score(4, None, "narrow", 20),  # no score at all: one null
        ]
    )
    times, values = traces.read_scores("faithfulness", NOW, NOW + HOUR)
    assert len(times) == len(values) == 4
    assert times.tolist() == [NOW + n * SECOND for n in range(1, 5)]
    np.testing.assert_array_equal(values, [0.4, 0.5, 0.8, np.nan])

    ask = MonitorAsk(("faithfulness",), since_ns=NOW, until_ns=NOW + HOUR, window="30m")
    (metric,) = monitor(ask, traces.read_scores, traces.store, now_ns=NOW + HOUR).metrics
    (bucket,) = metric.buckets
    assert (bucket.n, bucket.nulls) == (3, 1)
    assert bucket.mean == pytest.approx((0.4 + 0.5 + 0.8) / 3)

    mean = parse_alert("faithfulness.mean < 0.8 over 1h with n >= 3")
    reading = read_window(mean, traces.read_scores("faithfulness", NOW, NOW + HOUR)[1])
    assert reading.n == 3 and reading.value == pytest.approx(bucket.mean)
    nulls = parse_alert("faithfulness.null_rate > 0.2 over 1h")
    assert read_window(nulls, values).value == 0.25  # one trace of four, not 3 of 8
