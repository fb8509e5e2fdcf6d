"""The server's background scorer over its own trace store: spans posted to the receiver
(in-process app, SQLite then PostgreSQL) become traces, a rule made through the API scores
the complete ones of its service with the scripted judge within its daily budget, and the
traces and the rule list show what was scored and spent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragmeter.config import Settings
from ragmeter.service.app import create_app
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.trace_bodies import NOW, PROTOBUF, export, sid, tid

pytestmark = pytest.mark.both_stores


def _span(trace: int, number: int, parent: int | None, attributes: dict[str, str]) -> Span:
    return Span(
        trace_id=bytes.fromhex(tid(trace)),
        span_id=bytes.fromhex(sid(number)),
        parent_span_id=b"" if parent is None else bytes.fromhex(sid(parent)),
        name="answer" if parent is None else "retrieve",
        start_time_unix_nano=NOW + number,
        end_time_unix_nano=NOW + number + 1_000_000,
        attributes=[KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attributes.items()],
    )


def _trace(i: int) -> list[Span]:
    """A RAG trace: its retriever's document, then (in the same export) its root."""
    document = f"Book {i} was written by Author {i}."
    retriever = _span(i + 1, 2, 1, {
        "openinference.span.kind": "RETRIEVER",
        "retrieval.documents.0.document.id": f"book-{i}",
        "retrieval.documents.0.document.content": document,
    })  # fmt: skip
    root = _span(i + 1, 1, None, {
        "openinference.span.kind": "CHAIN",
        "input.value": f"Who wrote book {i}?",
        "output.value": f"Author {i} wrote book {i}.",
    })  # fmt: skip
    return [retriever, root]


async def _scored(http: httpx.AsyncClient, count: int, within: float = 30) -> list[Any]:
    """The traces, once ``count`` scores were given to them."""
    deadline = time.monotonic() + within
    while True:
        items: list[Any] = (await http.get("/traces", params={"limit": 50})).json()["data"]["items"]
        if sum(len(t["scores"]) for t in items) >= count or time.monotonic() > deadline:
            return items
        await asyncio.sleep(0.05)


async def _rules_once(
    http: httpx.AsyncClient, done: Callable[[Any], bool], within: float = 30
) -> list[Any]:
    """The rules, once the first satisfies ``done`` (a rule's cursor, with its count of
    traces scored, moves on just after the batch's scores are stored)."""
    deadline = time.monotonic() + within
    while True:
        listed: list[Any] = (await http.get("/online/rules")).json()["data"]
        if done(listed[0]) or time.monotonic() > deadline:
            return listed
        await asyncio.sleep(0.05)


async def test_a_rule_made_through_the_api_scores_the_servers_traces(
    judge_server: ScriptedJudgeServer, home: object
) -> None:
    settings = Settings.model_validate(
        {
            "models": {"judge": {"base_url": judge_server.url, "model": "scripted"}},
            "online": {"score_every_seconds": 0.1},
        }
    )
    api = create_app(settings)
    rule = {
        "name": "shop", "service": "shop", "metrics": ["faithfulness"],
        "judge": "judge", "delay_seconds": 0, "max_requests_per_day": 4,
    }  # fmt: skip
    transport = httpx.ASGITransport(app=api)
    async with (
        api.router.lifespan_context(api),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as root,
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1/api/v2/serve") as http,
    ):
        made = await http.post("/online/rules", json=rule)
        assert made.status_code == 201, made.text
        for i in range(6):
            body = export(_trace(i), service="shop" if i % 2 else "other").SerializeToString()
            sent = await root.post("/v1/traces", content=body, headers={"Content-Type": PROTOBUF})
            assert sent.status_code == 200, sent.text
        items = await _scored(http, 3)  # the 3 traces of "shop"
        listed = await _rules_once(http, lambda info: info["traces_scored"] >= 3)
    scores = [s | {"trace_id": t["trace_id"]} for t in items for s in t["scores"]]
    assert {s["trace_id"] for s in scores} == {tid(i + 1) for i in (1, 3, 5)}
    assert all(s["rule"] == "shop" and s["metric"] == "faithfulness" for s in scores)
    judged = [s for s in scores if s["score"] is not None]
    assert judged and all(s["score"] == 1.0 for s in judged)
    # the budget is a hard stop: 4 requests, then the rest say why they have no score
    assert all("budget" in s["reason"] for s in scores if s["score"] is None)
    assert len(judge_server.arrivals) == 4
    info = listed[0]
    assert (info["requests_today"], info["traces_today"], info["traces_scored"]) == (4, 3, 3)
    assert info["tokens_today"] > 0
