"""One concurrency limit per judge endpoint and model, shared by every engine of the process
(every run, every RagApp, whatever thread and event loop they run on). It halves on rate
limiting and grows back with successes (AIMD).

Runs execute on worker threads, each with an event loop of its own, so the limiter cannot use
asyncio primitives: its state sits behind a ``threading.Lock`` and each waiter parks on a
future of its own loop, woken through ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass, field

__all__ = ["AdaptiveLimiter", "limiter_for"]

#: shortest window in which 429s halve the limit once
MIN_WINDOW_S = 1.0


@dataclass(eq=False)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    #: a slot was handed to this waiter (its wake-up may still be on its way)
    granted: bool = False


@dataclass
class _State:
    active: int = 0
    streak: int = 0
    resume_at: float = 0.0
    window_end: float = 0.0
    waiters: deque[_Waiter] = field(default_factory=deque)


class AdaptiveLimiter:
    """At most ``limit`` requests in flight, across threads and event loops. A 429 halves the
    limit at most once per window (``max(1 s, Retry-After)``; later 429s in the window only
    extend the pause) and pauses new requests until the Retry-After has passed; each ``limit``
    successes in a row raise it by one, up to ``maximum``. A cancelled wait frees its slot."""

    def __init__(self, maximum: int) -> None:
        if maximum < 1:
            raise ValueError(f"maximum must be at least 1, got {maximum}")
        self.maximum = maximum
        self.limit = maximum
        self._lock = threading.Lock()
        self._state = _State()

    @property
    def active(self) -> int:
        """Slots held now."""
        return self._state.active

    async def acquire(self) -> None:
        """Wait for a slot (then for any rate-limit pause); the caller must ``release`` it."""
        waiter = self._enqueue()
        if waiter is not None:
            try:
                await waiter.future
            except asyncio.CancelledError:
                self._abandon(waiter)
                raise
        delay = self._state.resume_at - time.monotonic()
        if delay > 0:
            try:
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                self.release()
                raise

    def release(self) -> None:
        """Give a slot back (from any thread) and wake the next waiter."""
        with self._lock:
            self._state.active -= 1
            self._grant()

    def rate_limited(self, pause: float) -> None:
        """The server said 429 (``pause``: its Retry-After, already capped): back off for
        everyone, halving the limit if this is the first 429 of a window."""
        now = time.monotonic()
        with self._lock:
            state = self._state
            if now >= state.window_end:
                self.limit = max(1, self.limit // 2)
                state.window_end = now + max(MIN_WINDOW_S, pause)
            state.streak = 0
            state.resume_at = max(state.resume_at, now + pause)

    def resize(self, maximum: int) -> None:
        """A new configured maximum (a reloaded ``ragmeter.toml``): the limit follows it down
        at once and grows up to it with successes."""
        if maximum < 1:
            raise ValueError(f"maximum must be at least 1, got {maximum}")
        with self._lock:
            self.maximum = maximum
            self.limit = min(self.limit, maximum)

    def succeeded(self) -> None:
        """A request succeeded: after ``limit`` in a row the limit grows by one."""
        with self._lock:
            state = self._state
            state.streak += 1
            if state.streak >= self.limit and self.limit < self.maximum:
                state.streak = 0
                self.limit += 1
                self._grant()

    # -- under the lock ----------------------------------------------------------------------

    def _enqueue(self) -> _Waiter | None:
        """Take a slot at once (None), or queue a waiter for one."""
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._state
            if state.active < self.limit and not state.waiters:
                state.active += 1
                return None
            waiter = _Waiter(loop, loop.create_future())
            state.waiters.append(waiter)
            return waiter

    def _grant(self) -> None:
        """Hand free slots to waiters in order (the lock is held)."""
        state = self._state
        while state.waiters and state.active < self.limit:
            waiter = state.waiters.popleft()
            waiter.granted = True
            state.active += 1
            try:
                waiter.loop.call_soon_threadsafe(self._wake, waiter)
            except RuntimeError:  # its loop is closed: nobody will use the slot
                state.active -= 1

    def _wake(self, waiter: _Waiter) -> None:
        """On the waiter's loop: hand it the slot, or give the slot back if it gave up."""
        if waiter.future.cancelled():
            self.release()
        elif not waiter.future.done():
            waiter.future.set_result(None)

    def _abandon(self, waiter: _Waiter) -> None:
        """A waiter was cancelled: leave the queue, or give back a slot it was handed."""
        with self._lock:
            if not waiter.granted:
                self._state.waiters.remove(waiter)
                return
        # granted: if its future got the slot (result set), free it here; if the future was
        # cancelled first, ``_wake`` frees it when it runs
        if waiter.future.done() and not waiter.future.cancelled():
            self.release()


_limiters: dict[tuple[str, str], AdaptiveLimiter] = {}
_limiters_lock = threading.Lock()


def limiter_for(base_url: str, model: str, maximum: int) -> AdaptiveLimiter:
    """The process's limiter for ``model`` at ``base_url``, shared by every engine. Its maximum
    is the one the latest engine was made with: engines of a declared model all carry its
    configured concurrency, so a change to it (a reloaded config) applies from the next run."""
    key = (base_url.rstrip("/"), model)
    with _limiters_lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = _limiters[key] = AdaptiveLimiter(maximum)
        elif limiter.maximum != maximum:
            limiter.resize(maximum)
        return limiter
