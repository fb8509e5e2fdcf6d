"""A concurrency limit that halves on rate limiting and grows back with successes (AIMD)."""

from __future__ import annotations

import asyncio
import time

__all__ = ["AdaptiveLimiter"]


class AdaptiveLimiter:
    """At most ``limit`` requests in flight. A 429 halves the limit and pauses new requests
    until its Retry-After has passed; each ``limit`` successes in a row raise it by one, up to
    the configured maximum."""

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self.limit = maximum
        self.active = 0
        self._streak = 0
        self._resume_at = 0.0
        self._cond = asyncio.Condition()

    async def acquire(self) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self.active < self.limit)
            self.active += 1
        delay = self._resume_at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)

    async def release(self) -> None:
        async with self._cond:
            self.active -= 1
            self._cond.notify_all()

    def rate_limited(self, retry_after: float) -> None:
        """The server said 429: back off for everyone."""
        self.limit = max(1, self.limit // 2)
        self._streak = 0
        self._resume_at = max(self._resume_at, time.monotonic() + retry_after)

    async def succeeded(self) -> None:
        self._streak += 1
        if self._streak >= self.limit and self.limit < self.maximum:
            self._streak = 0
            async with self._cond:
                self.limit += 1
                self._cond.notify_all()
