"""The one retry policy: which failures retry, how long each wait is, how many tries."""

from __future__ import annotations

import email.utils
import time

import pytest

from ragmeter._retry import RetryPolicy, TryAgain, retry_after, retryable_status


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 599])
def test_transient_statuses_retry(status: int) -> None:
    assert retryable_status(status)


@pytest.mark.parametrize("status", [200, 301, 400, 401, 403, 404, 409, 413, 422, 501])
def test_the_requests_own_faults_do_not_retry(status: int) -> None:
    assert not retryable_status(status)


def test_retry_after_reads_milliseconds_seconds_and_dates() -> None:
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "-5"}) == 0.0
    future = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= (retry_after({"retry-after": future}) or 0) <= 61
    assert retry_after({"retry-after": "Mon, 01 Jan 2001 00:00:00 GMT"}) == 0.0


@pytest.mark.parametrize("value", ["soon", "", "Mon, 99 Foo 2001"])
def test_an_unreadable_retry_after_asks_nothing(value: str) -> None:
    assert retry_after({"retry-after": value}) is None
    assert retry_after({}) is None


def test_backoff_is_full_jitter_within_its_exponential_cap() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=30.0)
    for attempt, cap in [(1, 0.5), (2, 1.0), (4, 4.0), (7, 30.0), (10_000, 30.0)]:
        draws = [policy.delay(attempt) for _ in range(300)]
        assert all(0.0 <= d <= cap for d in draws)
        # spread over the whole range, so clients that failed together come back apart
        assert min(draws) < cap / 4 and max(draws) > cap * 3 / 4
        assert len(set(draws)) > 250


def test_a_servers_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(max_delay=30.0)
    assert policy.delay(1, retry_after=2.5) == 2.5
    assert policy.delay(3, retry_after=3600) == 30.0
    assert policy.delay(1, retry_after=0) == 0.0


@pytest.mark.parametrize("options", [{"attempts": 0}, {"base_delay": -1.0}, {"max_delay": -0.5}])
def test_a_policy_refuses_impossible_numbers(options: dict[str, float]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message names the number
        RetryPolicy(**options)  # type: ignore[arg-type]


async def test_run_tries_until_success_at_most_attempts_times() -> None:
    policy = RetryPolicy(attempts=4, base_delay=0.001)
    seen: list[int] = []

    async def flaky(attempt: int) -> str:
        seen.append(attempt)
        if attempt < 3:
            raise TryAgain(f"try {attempt} failed")
        return "done"

    assert await policy.run(flaky) == "done"
    assert seen == [1, 2, 3]

    async def never(attempt: int) -> str:
        seen.append(attempt)
        raise TryAgain(f"try {attempt} failed", wait=0.0)

    seen.clear()
    with pytest.raises(TryAgain, match="try 4 failed"):
        await policy.run(never)
    assert seen == [1, 2, 3, 4]


async def test_run_ends_at_once_on_any_other_error() -> None:
    seen: list[int] = []

    async def broken(attempt: int) -> str:
        seen.append(attempt)
        raise KeyError("not transient")

    with pytest.raises(KeyError):
        await RetryPolicy(attempts=5).run(broken)
    assert seen == [1]
