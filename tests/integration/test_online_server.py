"""The server's background scorer: a rule made through the API scores the complete traces
of the server's trace source (here ``MemoryTraces``, the in-memory source) with the
scripted judge, and the list shows what the rule spent and scored."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from ragmeter.config import Settings
from ragmeter.runs.online import MemoryTraces
from ragmeter.service.app import create_app
from ragmeter.testing import ScriptedJudgeServer
from ragmeter.traces import TraceRecord

pytestmark = pytest.mark.both_stores


def _trace(i: int, service: str) -> TraceRecord:
    row = {
        "query": f"Who wrote book {i}?",
        "response": f"Author {i} wrote book {i}.",
        "retrieved_contexts": [f"Book {i} was written by Author {i}."],
        "reference_contexts": [f"Book {i} was written by Author {i}."],
    }
    return TraceRecord(
        trace_id=f"{i + 1:032x}", name="answer", service=service, start_ns=0, end_ns=5,
        status="ok", complete=True, row=row,
    )  # fmt: skip


async def _scored(source: MemoryTraces, count: int, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if len(source.scores()) >= count:
            break
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
    source = MemoryTraces()
    api.state.services.online.source = source
    for i in range(6):
        source.add(_trace(i, "shop" if i % 2 else "other"), updated_ns=1_000 + i)
    rule = {
        "name": "shop", "service": "shop", "metrics": ["hit_rate", "faithfulness"],
        "judge": "judge", "delay_seconds": 0, "max_requests_per_day": 4,
    }  # fmt: skip
    transport = httpx.ASGITransport(app=api)
    async with (
        api.router.lifespan_context(api),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1/api/v2/serve") as http,
    ):
        made = await http.post("/online/rules", json=rule)
        assert made.status_code == 201, made.text
        await _scored(source, 6)  # 3 traces of "shop" x 2 metrics
        listed = (await http.get("/online/rules")).json()["data"]
    scores = source.scores()
    assert {s.trace_id for s in scores} == {f"{i + 1:032x}" for i in (1, 3, 5)}
    assert all(s.rule == "shop" for s in scores)
    judged = [s for s in scores if s.metric == "faithfulness"]
    assert len(judged) == 3 and any(s.score is not None for s in judged)
    assert all("budget" in (s.reason or "") for s in judged if s.score is None)
    assert all(s.score == 1.0 for s in scores if s.metric == "hit_rate")
    assert len(judge_server.arrivals) == 4  # the budget: 2 requests a trace
    info = listed[0]
    assert (info["requests_today"], info["traces_today"], info["traces_scored"]) == (4, 3, 3)
    assert info["tokens_today"] > 0
