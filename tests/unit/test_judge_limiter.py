"""The judge limiter: one per endpoint and model, shared by event loops on different threads,
halved once per window of 429s, and never leaking a slot to a cancelled wait."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ragmeter.judge import _limiter
from ragmeter.judge._limiter import AdaptiveLimiter, limiter_for


def test_two_event_loops_on_two_threads_never_exceed_the_maximum() -> None:
    limiter = AdaptiveLimiter(3)
    lock = threading.Lock()
    in_flight = 0
    most = 0

    async def request() -> None:
        nonlocal in_flight, most
        await limiter.acquire()
        try:
            with lock:
                in_flight += 1
                most = max(most, in_flight)
            await asyncio.sleep(0.002)
            with lock:
                in_flight -= 1
        finally:
            limiter.release()

    async def many() -> None:
        await asyncio.gather(*(request() for _ in range(60)))

    threads = [threading.Thread(target=asyncio.run, args=(many(),)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert most == 3 and limiter.active == 0


async def test_a_cancelled_wait_frees_its_slot() -> None:
    limiter = AdaptiveLimiter(1)
    await limiter.acquire()
    waiting = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    limiter.release()
    await asyncio.wait_for(limiter.acquire(), 5)  # the cancelled waiter holds nothing
    limiter.release()
    assert limiter.active == 0


async def test_a_wake_up_racing_a_cancel_frees_the_slot_either_way() -> None:
    limiter = AdaptiveLimiter(1)
    for wake_first in (False, True):
        await limiter.acquire()
        waiting = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)  # queued behind the held slot
        limiter.release()  # hands the slot to the waiter; its wake-up is on its way
        if wake_first:
            await asyncio.sleep(0)  # the wake-up runs, then the cancel lands
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.sleep(0)  # let a pending wake-up give the slot back
        assert limiter.active == 0, wake_first
        await asyncio.wait_for(limiter.acquire(), 5)
        limiter.release()


def test_16_concurrent_429s_halve_the_limit_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limiter, "MIN_WINDOW_S", 0.05)
    limiter = AdaptiveLimiter(16)
    barrier = threading.Barrier(16)

    def rate_limited() -> None:
        barrier.wait()
        limiter.rate_limited(0.0)

    threads = [threading.Thread(target=rate_limited) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert limiter.limit == 8
    threading.Event().wait(0.1)  # the window is over: the next 429 halves again
    limiter.rate_limited(0.0)
    assert limiter.limit == 4
    for _ in range(4):  # ``limit`` successes in a row grow it by one
        limiter.succeeded()
    assert limiter.limit == 5


async def test_a_429_pauses_new_requests_until_its_retry_after() -> None:
    limiter = AdaptiveLimiter(4)
    limiter.rate_limited(0.3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await limiter.acquire()
    limiter.release()
    assert loop.time() - started >= 0.25


def test_one_limiter_per_endpoint_and_model_follows_the_configured_maximum() -> None:
    first = limiter_for("http://127.0.0.1:1/v1", "limiter-test-model", 3)
    assert limiter_for("http://127.0.0.1:1/v1/", "limiter-test-model", 3) is first
    assert first.maximum == first.limit == 3
    assert limiter_for("http://127.0.0.1:1/v1", "another-model", 10) is not first
    # the model's setting changed (a reloaded config): the shared limiter follows it
    assert limiter_for("http://127.0.0.1:1/v1", "limiter-test-model", 2) is first
    assert first.maximum == first.limit == 2
    limiter_for("http://127.0.0.1:1/v1", "limiter-test-model", 5)
    assert first.maximum == 5 and first.limit == 2  # grows back with successes
    for _ in range(2):
        first.succeeded()
    assert first.limit == 3


@pytest.mark.parametrize(
    ("declared", "flag", "expected"),
    [(None, None, 16), (None, 4, 4), (3, 4, 3), (3, None, 3)],
)
def test_a_models_own_limit_wins_then_the_flag_then_16(
    declared: int | None, flag: int | None, expected: int
) -> None:
    from ragmeter.config import ModelConfig, Settings
    from ragmeter.judge.from_config import judge_from_config

    model = ModelConfig(
        name="m", base_url="http://127.0.0.1:1/v1", model="m", max_concurrency=declared
    )
    settings = Settings(models={"m": model})
    engine = judge_from_config("m", max_concurrency=flag, cache=False, settings=settings)
    assert engine.settings.max_concurrency == expected
