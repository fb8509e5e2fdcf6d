"""The server's background work on production traces: spans accepted by ``POST /v1/traces``
wait in a bounded queue (``[online] max_queued_spans`` spans and ``max_queued_mb`` of the
bodies they came in; full, the receiver answers 503 and the exporter retries; a request
larger than the whole queue is 413, as it never fits) and one task
writes them to the store in batches, so a burst never holds a request; a stopping server
writes every accepted span before it exits. Another task deletes traces older than
``[online] keep_days``, when the server starts and every hour."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Sequence

from ragmeter.errors import RagmeterError
from ragmeter.runs.storage.traces import TraceStore
from ragmeter.traces.records import SpanRecord

__all__ = ["PURGE_PERIOD", "SpanQueue", "TraceWork"]

log = logging.getLogger(__name__)

#: spans written per transaction
WRITE_BATCH = 2000
#: seconds between retries when the store cannot take a batch
RETRY_SECONDS = 1.0
#: seconds between two deletions of old traces
PURGE_PERIOD = 3600.0


def _not_a_root(span: SpanRecord) -> bool:
    """Sorts roots first: a span without a parent, or whose parent is another process's."""
    return span.parent_id is not None and not span.remote_parent


class SpanQueue:
    """Spans accepted and not yet stored, at most ``capacity`` of them and ``max_bytes`` of the
    bodies they came in (those being written count until they are stored). Used on the
    server's event loop only."""

    def __init__(self, traces: TraceStore, capacity: int, max_bytes: int) -> None:
        self.traces = traces
        self.capacity = capacity
        self.max_bytes = max_bytes
        #: each span with its share of the bytes of the body it came in
        self._pending: deque[tuple[SpanRecord, int]] = deque()
        self._writing = 0
        self._writing_bytes = 0
        self._pending_bytes = 0
        #: spans accepted and not yet stored, by trace
        self._per_trace: Counter[str] = Counter()
        self._wake = asyncio.Event()
        #: refusing spans: before the server's background work starts, and once it stops
        self.closed = True

    @property
    def queued(self) -> int:
        """Spans accepted and not yet stored."""
        return len(self._pending) + self._writing

    @property
    def queued_bytes(self) -> int:
        """Bytes of the bodies the spans accepted and not yet stored came in."""
        return self._pending_bytes + self._writing_bytes

    def offer(self, spans: Sequence[SpanRecord], size: int = 0) -> bool:
        """Take all of ``spans`` (from a body of ``size`` bytes), or none (False) when they
        would pass a cap or the server is stopping."""
        if self.closed or self.refusal(len(spans), size):
            return False
        share, extra = divmod(size, len(spans)) if spans else (0, 0)
        self._pending.extend((s, share + (extra if n == 0 else 0)) for n, s in enumerate(spans))
        self._per_trace.update(s.trace_id for s in spans)
        self._pending_bytes += size
        self._wake.set()
        return True

    def refusal(self, count: int, size: int) -> str:
        """Why ``count`` spans of ``size`` bytes would not fit now, naming the setting ("" when
        they fit)."""
        if self.queued + count > self.capacity:
            return (
                f"the receiver's queue is full ({self.capacity:,} spans waiting to be stored, "
                "[online] max_queued_spans)"
            )
        if self.queued_bytes + size > self.max_bytes:
            return (
                f"the receiver's queue is full ({self.max_bytes / 1_000_000:g} MB of spans "
                "waiting to be stored, [online] max_queued_mb)"
            )
        return ""

    def trace_room(
        self, spans: Sequence[SpanRecord], stored: dict[str, int]
    ) -> tuple[list[SpanRecord], str]:
        """The spans of ``spans`` their traces have room for (``[online] max_spans_per_trace``
        less the spans ``stored`` and those queued), a root first; and why the others were
        left out, with how many ("" when none was)."""
        cap = self.traces.max_spans_per_trace
        by_trace: dict[str, dict[str, SpanRecord]] = {}
        for span in spans:
            by_trace.setdefault(span.trace_id, {}).setdefault(span.span_id, span)
        kept: list[SpanRecord] = []
        left, first = 0, ""
        for trace_id, some in by_trace.items():
            room = max(cap - stored.get(trace_id, 0) - self._per_trace[trace_id], 0)
            ordered = sorted(some.values(), key=_not_a_root)
            kept.extend(ordered[:room])
            if len(ordered) > room:
                left += len(ordered) - room
                first = first or f"trace {trace_id} had room for {room:,} more"
        if not left:
            return kept, ""
        why = f"{left:,} spans past [online] max_spans_per_trace ({cap:,}); the first, {first}"
        return kept, why

    def never_fits(self, count: int, size: int) -> str:
        """Why ``count`` spans of ``size`` bytes would not fit even an empty queue, naming the
        setting ("" when they would): such a request can never succeed, so it is not retried."""
        if count > self.capacity:
            return (
                f"the request holds {count:,} spans, more than the receiver's queue ever holds "
                f"([online] max_queued_spans, {self.capacity:,})"
            )
        if size > self.max_bytes:
            return (
                f"the request's spans came in {size / 1_000_000:g} MB, more than the receiver's "
                f"queue ever holds ([online] max_queued_mb, {self.max_bytes / 1_000_000:g})"
            )
        return ""

    async def _write_one_batch(self) -> bool:
        """Store up to ``WRITE_BATCH`` pending spans; False (the spans kept in the queue)
        when the store refused them."""
        count = min(len(self._pending), WRITE_BATCH)
        batch = [self._pending.popleft() for _ in range(count)]
        size = sum(share for _, share in batch)
        self._pending_bytes -= size
        self._writing, self._writing_bytes = count, size
        try:
            await asyncio.to_thread(self.traces.add_spans, [span for span, _ in batch])
        except RagmeterError as exc:
            log.warning("cannot store %d spans (kept, retried): %s", count, exc)
            self._pending.extendleft(reversed(batch))
            self._pending_bytes += size
            return False
        finally:
            self._writing, self._writing_bytes = 0, 0
        self._per_trace.subtract(span.trace_id for span, _ in batch)
        for trace_id in {span.trace_id for span, _ in batch}:
            if self._per_trace[trace_id] <= 0:
                del self._per_trace[trace_id]
        return True

    async def run(self, attempts: int = 3) -> None:
        """Write pending spans as they come, until closed and all are written (a closed
        queue whose store refuses them ``attempts`` times in a row: the count lost is
        logged)."""
        failures = 0
        while True:
            if not self._pending:
                if self.closed:
                    return
                await self._wake.wait()
                self._wake.clear()
                continue
            if await self._write_one_batch():
                failures = 0
                continue
            failures += 1
            if self.closed and failures >= attempts:
                log.error("stopping: %d accepted spans could not be stored", len(self._pending))
                return
            await asyncio.sleep(RETRY_SECONDS)

    def open(self) -> None:
        """Take spans (``run`` writes them, on the running event loop)."""
        self._wake = asyncio.Event()
        self.closed = False

    def close(self) -> None:
        """Refuse new spans; ``run`` returns once the pending ones are written."""
        self.closed = True
        self._wake.set()


class TraceWork:
    """The writer and the retention tasks of one server, started and stopped by its lifespan."""

    def __init__(self, queue: SpanQueue, keep_days: float) -> None:
        self.queue = queue
        self.keep_days = keep_days
        self._writer: asyncio.Task[None] | None = None
        self._purger: asyncio.Task[None] | None = None

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.queue.open()
        self._writer = loop.create_task(self.queue.run())
        self._purger = loop.create_task(self._purge())

    async def _purge(self) -> None:
        while True:
            try:
                deleted = await asyncio.to_thread(self.queue.traces.purge, self.keep_days)
            except RagmeterError as exc:  # the store is away for a moment: next time
                log.warning("cannot delete old traces: %s", exc)
            else:
                if deleted:
                    log.info("deleted %d traces older than %g days", deleted, self.keep_days)
            await asyncio.sleep(PURGE_PERIOD)

    async def stop(self) -> None:
        """Stop deleting; store every span still queued (a write under way finishes)."""
        if self._purger is not None:
            self._purger.cancel()
        self.queue.close()
        if self._writer is not None:
            await self._writer
