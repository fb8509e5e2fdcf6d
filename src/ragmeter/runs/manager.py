"""A bounded pool of worker threads that execute runs, each on an event loop of its own, so
embedding and metric work never blocks the caller's loop (the HTTP server's)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ragmeter.apps import AppPolicy
from ragmeter.knowledge import KnowledgeBase
from ragmeter.runs.executor import execute_run
from ragmeter.runs.store import RunStore

__all__ = ["RunManager"]


@dataclass
class _Active:
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[None] | None = None
    cancelled: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class RunManager:
    """Queues runs onto ``workers`` threads; ``cancel`` stops one mid-batch. ``policy`` gives
    the app policy runs execute under (the service's, from its current settings)."""

    def __init__(
        self,
        runs: RunStore,
        kb: KnowledgeBase,
        workers: int = 2,
        policy: Callable[[], AppPolicy | None] = lambda: None,
    ) -> None:
        self.runs = runs
        self.kb = kb
        self.policy = policy
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="ragmeter-run"
        )
        self._active: dict[str, _Active] = {}
        self._futures: dict[str, concurrent.futures.Future[None]] = {}
        # re-entrant: a future already done runs its callback (which locks) inside submit
        self._lock = threading.RLock()

    def submit(self, run_id: str) -> concurrent.futures.Future[None]:
        """Queue a pending run; the future resolves when it is done, failed or cancelled."""
        with self._lock:
            running = self._futures.get(run_id)
            if running is not None and not running.done():
                return running
            self._active[run_id] = _Active()
            future = self._pool.submit(self._work, run_id)
            self._futures[run_id] = future
            future.add_done_callback(lambda _f: self._forget(run_id))
            return future

    def _forget(self, run_id: str) -> None:
        with self._lock:
            self._active.pop(run_id, None)
            future = self._futures.get(run_id)
            if future is not None and future.done():
                del self._futures[run_id]

    def future(self, run_id: str) -> concurrent.futures.Future[None] | None:
        with self._lock:
            return self._futures.get(run_id)

    def _work(self, run_id: str) -> None:
        active = self._active.get(run_id) or _Active()

        async def main() -> None:
            with active.lock:
                if active.cancelled:
                    return
                active.loop = asyncio.get_running_loop()
                active.task = asyncio.current_task()
            await execute_run(self.runs, self.kb, run_id, policy=self.policy())

        asyncio.run(main())

    def cancel(self, run_id: str) -> None:
        """Stop a queued or running run (its state is set by the caller or the executor)."""
        active = self._active.get(run_id)
        if active is None:
            return
        with active.lock:
            active.cancelled = True
            if active.loop is not None and active.task is not None:
                active.loop.call_soon_threadsafe(active.task.cancel)

    def shutdown(self) -> None:
        """Stop taking work; runs under way stop mid-batch and are left resumable."""
        stopped = list(self._active)
        for run_id in stopped:
            self.cancel(run_id)
        self._pool.shutdown(wait=True, cancel_futures=True)
        for run_id in stopped:
            self.runs.interrupt(run_id)
