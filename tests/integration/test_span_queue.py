"""The receiver's span queue over a real store: refused before the server's work starts and
once it stops, bounded by its capacity, and every accepted span stored by the time ``run``
returns after ``close``."""

from __future__ import annotations

import asyncio
import time
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
