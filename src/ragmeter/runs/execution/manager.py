"""A bounded pool of worker threads that execute runs, each on an event loop of its own, so
embedding and metric work never blocks the caller's loop (the HTTP server's)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ragmeter.apps import AppPolicy
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.execution.choice import executor_for
from ragmeter.runs.execution.executor import RunLimits, execute_run
from ragmeter.runs.storage.store import RunStore

__all__ = ["RunManager"]

log = logging.getLogger(__name__)


@dataclass
class _Active:
    #: resolves when the run's worker is over; cancelling it does not touch the run
    done: concurrent.futures.Future[None] = field(default_factory=concurrent.futures.Future)
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[None] | None = None
    cancelled: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class RunManager:
    """Queues runs onto ``workers`` threads; ``cancel`` stops one between rows. ``policy`` gives
    the app policy runs execute under (the service's, from its current settings) and
    ``limits`` what one may take."""

    def __init__(
        self,
        runs: RunStore,
        kb: KnowledgeBase,
        workers: int = 2,
        policy: Callable[[], AppPolicy | None] = lambda: None,
        limits: RunLimits | None = None,
    ) -> None:
        self.runs = runs
        self.kb = kb
        self.policy = policy
        self.limits = limits
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="ragmeter-run"
        )
        self._active: dict[str, _Active] = {}
        self._lock = threading.Lock()

    def submit(self, run_id: str) -> concurrent.futures.Future[None]:
        """Queue a pending run. The future resolves when it is done, failed or cancelled;
        it is the run's to resolve: cancelling it (a caller that gave up) leaves the run
        queued, so it still runs."""
        with self._lock:
            active = self._active.get(run_id)
            if active is not None and not active.done.done():
                return active.done
            active = self._active[run_id] = _Active()
            self._pool.submit(self._work, run_id, active)
            return active.done

    def future(self, run_id: str) -> concurrent.futures.Future[None] | None:
        with self._lock:
            active = self._active.get(run_id)
            return None if active is None else active.done

    async def wait(self, run_id: str) -> None:
        """Wait until the run's worker is over (at once if it has none). Cancelling the wait
        (a client that disconnected) is shielded from the run: it stays queued and runs."""
        future = self.future(run_id)
        if future is not None:
            await asyncio.shield(asyncio.wrap_future(future))

    def _work(self, run_id: str, active: _Active) -> None:
        async def main() -> None:
            with active.lock:
                if active.cancelled:
                    return
                active.loop = asyncio.get_running_loop()
                active.task = asyncio.current_task()
            policy = self.policy()
            await execute_run(
                self.runs,
                self.kb,
                run_id,
                policy=policy,
                limits=self.limits,
                executor=executor_for(self.kb.settings, self.kb.store.url, policy=policy),
            )

        try:
            asyncio.run(main())
        except BaseException:
            log.exception("run %s: its worker failed", run_id)
        finally:
            with self._lock:
                if self._active.get(run_id) is active:
                    del self._active[run_id]
            # (a caller that gave up waiting may have cancelled it meanwhile)
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                active.done.set_result(None)

    def cancel(self, run_id: str) -> None:
        """Stop a queued or running run (its state is set by the caller or the executor)."""
        with self._lock:
            active = self._active.get(run_id)
        if active is None:
            return
        with active.lock:
            active.cancelled = True
            if active.loop is not None and active.task is not None:
                with contextlib.suppress(RuntimeError):  # its loop closed: the run is over
                    active.loop.call_soon_threadsafe(active.task.cancel)

    def shutdown(self) -> None:
        """Stop taking work; runs under way or queued become failed, interrupted and
        resumable (marked before they are stopped, so the mark is not theirs to overwrite)."""
        with self._lock:
            stopped = list(self._active)
        for run_id in stopped:
            self.runs.interrupt(run_id)
            self.cancel(run_id)
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            left = list(self._active.values())
            self._active.clear()
        for active in left:  # queued runs whose work was dropped
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                active.done.set_result(None)
