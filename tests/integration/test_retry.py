"""One retry policy for the judge, OpenAI-compatible embeddings and HTTP apps, through each
real client (the judge's httpx transport, the openai SDK, httpx) against an endpoint on 127.0.0.1 that fails on script:
a 429's Retry-After is waited and the request succeeds, a 400 is not retried, tries are
bounded by each client's numbers, and a Retry-After is capped."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ragmeter._retry import RetryPolicy
from ragmeter.apps import HttpApp
from ragmeter.embeddings import OpenAIEmbedder
from ragmeter.errors import RagmeterError
from ragmeter.judge import JudgeEngine, JudgeSettings
from tests.integration.flaky_server import Failure, FlakyServer

#: sends one request through a client to the server at ``url`` (None: the client's default
#: number of retries); ``policy`` replaces the client's retry policy where given
Send = Callable[[str, int | None, RetryPolicy | None], Awaitable[Any]]


async def ask_judge(url: str, retries: int | None, policy: RetryPolicy | None) -> Any:
    extra = {} if retries is None else {"max_retries": retries}
    if policy is not None:
        extra.update(retry_max_delay=policy.max_delay, max_retries=policy.attempts - 1)
    engine = JudgeEngine(JudgeSettings(model="flaky", base_url=f"{url}/v1", **extra))
    try:
        return await engine.complete("Say something.")
    finally:
        await engine.aclose()


async def embed(url: str, retries: int | None, policy: RetryPolicy | None) -> Any:
    extra = {} if retries is None else {"max_retries": retries}
    embedder = OpenAIEmbedder("flaky", base_url=f"{url}/v1", **extra)
    if policy is not None:
        embedder.retry = policy
    try:
        return await embedder.embed(["one text", "another text"])
    finally:
        await embedder.aclose()


async def ask_app(url: str, retries: int | None, policy: RetryPolicy | None) -> Any:
    extra = {} if retries is None else {"max_retries": retries}
    app = HttpApp("flaky", f"{url}/answer", **extra)
    if policy is not None:
        app.retry = policy
    try:
        return await app.answer("what is AWEL?")
    finally:
        await app.aclose()


CLIENTS = pytest.mark.parametrize(
    "send", [ask_judge, embed, ask_app], ids=["judge", "embeddings", "http-app"]
)


async def _against(failures: list[Failure], send: Send, **options: Any) -> FlakyServer:
    with FlakyServer(failures) as server:
        await send(server.url, options.get("retries"), options.get("policy"))
    return server


@CLIENTS
async def test_a_429_waits_its_retry_after_then_succeeds(send: Send) -> None:
    server = await _against([(429, {"Retry-After": "1"})], send)
    assert len(server.arrivals) == 2
    (gap,) = server.gaps
    assert 0.95 <= gap < 15, gap  # it waited the second it was asked to (and stopped at all)


@CLIENTS
async def test_a_503_with_an_http_date_retry_after_is_honoured(send: Send) -> None:
    server = await _against([(503, {"Retry-After": "Mon, 01 Jan 2001 00:00:00 GMT"})], send)
    assert len(server.arrivals) == 2  # a date in the past: try again at once, and succeed


@CLIENTS
async def test_a_400_is_not_retried(send: Send) -> None:
    with FlakyServer([(400, {})] * 5) as server:
        with pytest.raises(RagmeterError, match="400"):
            await send(server.url, 3, None)
        assert len(server.arrivals) == 1


@pytest.mark.parametrize(
    ("send", "attempts"),
    [(ask_judge, 5), (embed, 4), (ask_app, 3)],
    ids=["judge", "embeddings", "http-app"],
)
async def test_tries_are_bounded_by_each_clients_default(send: Send, attempts: int) -> None:
    with FlakyServer([(503, {"Retry-After": "0"})] * 20) as server:
        with pytest.raises(RagmeterError, match=f"after {attempts} (tries|attempts)"):
            await send(server.url, None, None)
        assert len(server.arrivals) == attempts


@CLIENTS
async def test_max_retries_sets_the_tries(send: Send) -> None:
    with FlakyServer([(500, {"Retry-After": "0"})] * 20) as server:
        with pytest.raises(RagmeterError):
            await send(server.url, 1, None)
        assert len(server.arrivals) == 2


@CLIENTS
async def test_a_retry_after_beyond_the_cap_waits_only_the_cap(send: Send) -> None:
    policy = RetryPolicy(attempts=3, max_delay=0.2)
    server = await _against([(429, {"Retry-After": "3600"})], send, policy=policy)
    assert len(server.arrivals) == 2
    assert server.gaps[0] < 15  # not the hour it asked for
