"""One retry policy for every request ragmeter sends out: the judge, OpenAI-compatible
embeddings and HTTP apps. It says which failures are worth another try, how long to wait
before it and how many tries a request gets; each client only says how a failure looks to it.

Worth another try: no answer (timeout, refused or dropped connection), 408, 429 and any 5xx
but 501. Never any other 4xx, 409 included: the request itself is wrong (or conflicts with
the server's state), so sending it again cannot help. The wait is the server's Retry-After
(``Retry-After-Ms``, seconds or an HTTP date) when it sends one, otherwise exponential backoff
with full jitter; either is capped at ``max_delay``.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import tenacity

__all__ = ["RetryPolicy", "TryAgain", "retry_after", "retryable_status"]

T = TypeVar("T")
#: a shift past this many doublings overflows a float long after ``max_delay`` caps it
_MAX_DOUBLINGS = 60


def retryable_status(status: int) -> bool:
    """Whether an HTTP answer with ``status`` is worth another try: 408 (the server timed
    out), 429 (rate limited) and 5xx but 501 (the server cannot do it at all)."""
    return status in (408, 429) or (500 <= status < 600 and status != 501)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The seconds the server asks to wait (``Retry-After-Ms``, or ``Retry-After`` in seconds
    or as an HTTP date), never negative; None when it asks nothing readable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class TryAgain(Exception):
    """One try failed in a way worth another. ``reason`` ends the error once the tries run out;
    ``retry_after`` is what the server asked to wait; ``wait`` a wait the client chose itself
    (0 when something else already holds the request back)."""

    def __init__(
        self, reason: str, *, retry_after: float | None = None, wait: float | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.wait = wait


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``attempts`` tries of one request; between two, the server's Retry-After or
    full-jitter backoff from ``base_delay``, both capped at ``max_delay`` seconds."""

    attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("base_delay and max_delay must not be negative")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed try number ``attempt`` (1 is the first): the server's
        ``retry_after`` capped at ``max_delay``, else uniform in [0, min(max_delay,
        base_delay * 2^(attempt - 1))] (full jitter: clients that failed together spread out)."""
        if retry_after is not None:
            return min(max(0.0, retry_after), self.max_delay)
        doublings = min(max(0, attempt - 1), _MAX_DOUBLINGS)
        return random.uniform(0.0, min(self.max_delay, self.base_delay * 2**doublings))

    async def run(self, attempt: Callable[[int], Awaitable[T]]) -> T:
        """``await attempt(n)`` for n = 1, 2, ... until it returns; each ``TryAgain`` waits and
        tries again, the last one (after ``attempts`` tries) is raised. Any other exception
        ends the request at once."""
        async for trying in self._retrying():
            with trying:
                return await attempt(trying.retry_state.attempt_number)
        raise RuntimeError("the retry loop ended without an outcome")  # tenacity never does

    def _retrying(self) -> tenacity.AsyncRetrying:
        import tenacity  # imported on first use: ragmeter's import stays light

        return tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(TryAgain),
            reraise=True,
        )

    def _wait(self, state: tenacity.RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        if not isinstance(failure, TryAgain):
            return self.delay(state.attempt_number)
        if failure.wait is not None:
            return failure.wait
        return self.delay(state.attempt_number, failure.retry_after)
