"""The receiver's span queue over a real store: refused before the server's work starts and
once it stops, bounded by its capacity, and every accepted span stored by the time ``run``
returns after ``close``."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

from ragmeter.runs.storage.traces import TraceStore
from ragmeter.service.ingest import SpanQueue
from ragmeter.store.db import Store
from ragmeter.traces.records import SpanRecord


def _spans(trace: int, count: int) -> list[SpanRecord]:
    now = time.time_ns()
    return [
        SpanRecord(f"{trace:032x}", f"{n + 1:016x}", None if n == 0 else f"{1:016x}",
                   f"s{n}", "CHAIN", now + n, now + n + 5, "ok")
        for n in range(count)
    ]  # fmt: skip


def test_the_queue_is_bounded_and_stores_everything_it_took(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'q.db'}")
    traces = TraceStore(store)
    queue = SpanQueue(traces, capacity=10, max_bytes=1_000_000)
    assert not queue.offer(_spans(1, 1))  # not started: refused

    async def scenario() -> None:
        queue.open()
        assert queue.offer(_spans(1, 6)) and not queue.offer(_spans(2, 5))
        assert queue.queued == 6 and queue.offer(_spans(3, 4))
        writer = asyncio.create_task(queue.run())
        queue.close()
        assert not queue.offer(_spans(4, 1))  # stopping: refused
        await writer

    asyncio.run(scenario())
    found, total = traces.list()
    assert total == 2 and sorted(t.record.span_count for t in found) == [4, 6]
    assert queue.queued == 0
    store.close()


def test_the_queue_is_bounded_in_bytes_too(tmp_path: Path) -> None:
    """Spans are not all alike: 100,000 spans of a 5 MB body each would be 500 GB waiting.
    The bytes of the bodies they came in are counted against ``[online] max_queued_mb``."""
    store = Store(f"sqlite:///{tmp_path / 'q.db'}")
    traces = TraceStore(store)
    queue = SpanQueue(traces, capacity=100, max_bytes=1_000)

    async def scenario() -> None:
        queue.open()
        assert queue.offer(_spans(1, 1), size=600)
        assert not queue.offer(_spans(2, 1), size=600)
        assert "[online] max_queued_mb" in queue.refusal(1, 600)
        assert "[online] max_queued_spans" in queue.refusal(101, 1)
        # a full queue is a refusal for now; a request larger than the queue, for ever
        assert queue.never_fits(1, 600) == "" and queue.never_fits(100, 1_000) == ""
        assert "[online] max_queued_spans" in queue.never_fits(101, 1)
        assert "[online] max_queued_mb" in queue.never_fits(1, 1_001)
        assert queue.offer(_spans(3, 2), size=400) and queue.queued_bytes == 1_000
        writer = asyncio.create_task(queue.run())
        queue.close()
        await writer

    asyncio.run(scenario())
    assert traces.list()[1] == 2
    assert queue.queued == 0 and queue.queued_bytes == 0
    store.close()


def test_a_trace_has_room_for_its_cap_less_what_is_stored_and_queued(tmp_path: Path) -> None:
    """``[online] max_spans_per_trace`` counted when spans are offered: the spans stored (as
    the store says) and those waiting count; a root is taken first; the rest are named."""
    store = Store(f"sqlite:///{tmp_path / 'q.db'}")
    queue = SpanQueue(TraceStore(store, max_spans_per_trace=5), capacity=100, max_bytes=10**6)

    async def scenario() -> None:
        queue.open()
        assert queue.offer(_spans(1, 2)[1:])  # one child of trace 1 waiting
        child = _spans(1, 2)[1]
        more = [replace(child, span_id=f"{n:016x}") for n in range(10, 14)]
        root = _spans(1, 1)[0]
        kept, why = queue.trace_room([*more, root], {child.trace_id: 2})
        assert kept == [root, more[0]]  # 5 less 2 stored less 1 waiting: room for 2
        assert "3 spans past [online] max_spans_per_trace (5)" in why
        assert queue.trace_room(more[:1], {}) == (more[:1], "")

    asyncio.run(scenario())
    store.close()
