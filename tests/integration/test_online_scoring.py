"""Online rules scoring traces with the offline engine and the scripted judge: the daily
budget is a hard stop (counted at the judge server), deterministic metrics score every
trace, judged ones the sampled share, the ledger holds across concurrent reservers, and the
cursor makes a second look (or a restarted server) neither rescore nor skip."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from ragmeter.config import OnlineRule, Settings
from ragmeter.runs.online import (
    BudgetLedger,
    MemoryTraces,
    OnlineScoring,
    RuleScorer,
    RuleStore,
    sampled,
    utc_day,
)
from ragmeter.store.db import Store
from ragmeter.testing import ScriptedJudgeServer
from ragmeter.traces import TraceRecord

pytestmark = pytest.mark.both_stores


def _trace(i: int, **row: Any) -> TraceRecord:
    fields = {
        "query": f"What is the capital of country {i}?",
        "response": f"The capital of country {i} is City {i}.",
        "retrieved_contexts": [f"City {i} is the capital of country {i}.", "Unrelated text."],
        "reference_contexts": [f"City {i} is the capital of country {i}."],
        **row,
    }
    return TraceRecord(
        trace_id=f"{i:032x}", name="chat", service="shop-bot", start_ns=0, end_ns=1_000,
        status="ok", complete=True, row=fields,
    )  # fmt: skip


def _settings(url: str, judge: ScriptedJudgeServer, **online: Any) -> Settings:
    return Settings.model_validate(
        {
            "models": {"judge": {"base_url": judge.url, "model": "scripted"}},
            "store": {"url": url},
            "online": online,
        }
    )


def _rule(**changes: Any) -> OnlineRule:
    values = {"name": "prod", "metrics": ["hit_rate", "faithfulness"], "judge": "judge"}
    return OnlineRule.model_validate({**values, **changes})


def test_a_budget_of_n_requests_sends_at_most_n(
    store_url: str, judge_server: ScriptedJudgeServer
) -> None:
    settings = _settings(store_url, judge_server)
    ledger = BudgetLedger(Store(store_url))
    rule = _rule(max_requests_per_day=5)
    traces = [_trace(i) for i in range(30)]

    async def score() -> list[Any]:
        scorer = RuleScorer(rule, settings, ledger)
        try:
            first = await scorer.score(traces[:3])  # 2 requests a trace: 2 traces whole
            second = await scorer.score(traces[3:])  # the budget is spent before it starts
        finally:
            await scorer.aclose()
        return first + second

    scores = asyncio.run(score())
    assert len(judge_server.arrivals) <= 5
    spent = ledger.spent("prod", utc_day())
    assert spent.requests == len(judge_server.arrivals) == 4  # the 5th would end no trace
    assert spent.traces == 30
    faithfulness = [s for s in scores if s.metric == "faithfulness"]
    judged = [s for s in faithfulness if s.score is not None]
    refused = [s for s in faithfulness if s.score is None]
    assert judged and all(s.judge_model == "judge" and s.tokens > 0 for s in judged)
    assert len(judged) + len(refused) == 30
    assert all(
        "daily judge budget of online rule 'prod' is spent" in (s.reason or "") for s in refused
    )
    assert all(s.error_kind == "upstream" for s in refused)
    skipped = [s for s in refused if s.trace_id in {t.trace_id for t in traces[3:]}]
    assert len(skipped) == 27 and all(s.reason.startswith("skipped:") for s in skipped)  # type: ignore[union-attr]
    # deterministic metrics need no budget: every trace has its hit rate
    hits = [s for s in scores if s.metric == "hit_rate"]
    assert len(hits) == 30 and all(s.score == 1.0 and s.judge_model is None for s in hits)


def test_the_token_budget_stops_too(store_url: str, judge_server: ScriptedJudgeServer) -> None:
    settings = _settings(store_url, judge_server)
    ledger = BudgetLedger(Store(store_url))
    rule = _rule(max_tokens_per_day=1, max_requests_per_day=100)

    async def score() -> list[Any]:
        scorer = RuleScorer(rule, settings, ledger)
        try:
            return await scorer.score([_trace(i) for i in range(3)])
        finally:
            await scorer.aclose()

    scores = asyncio.run(score())
    assert not judge_server.arrivals  # no prompt fits in one token
    assert all("tokens on" in (s.reason or "") for s in scores if s.metric == "faithfulness")


def test_judged_metrics_score_the_sampled_share_and_deterministic_ones_all(
    store_url: str, judge_server: ScriptedJudgeServer
) -> None:
    settings = _settings(store_url, judge_server)
    traces = [_trace(i) for i in range(40)]
    rule = _rule(sample_rate=0.3, max_requests_per_day=1000)
    expected = {t.trace_id for t in traces if sampled(0.3, t.trace_id)}
    assert 0 < len(expected) < 40

    async def score() -> list[Any]:
        scorer = RuleScorer(rule, settings, BudgetLedger(Store(store_url)))
        try:
            return await scorer.score(traces)
        finally:
            await scorer.aclose()

    scores = asyncio.run(score())
    assert {s.trace_id for s in scores if s.metric == "faithfulness"} == expected
    assert len([s for s in scores if s.metric == "hit_rate"]) == 40
    assert all(s.score is not None for s in scores)


def test_a_trace_lacking_a_field_gets_a_null_with_the_reason(
    store_url: str, judge_server: ScriptedJudgeServer
) -> None:
    settings = _settings(store_url, judge_server)
    bare = TraceRecord(
        trace_id="f" * 32, name="chat", service=None, start_ns=0, end_ns=1, status="ok",
        complete=True, row={"query": "hi", "response": "hello"},
    )  # fmt: skip
    broken = TraceRecord(
        trace_id="e" * 32, name="chat", service=None, start_ns=0, end_ns=1, status="ok",
        complete=True, row={"response": "no question"},
    )  # fmt: skip

    async def score() -> list[Any]:
        scorer = RuleScorer(_rule(), settings, BudgetLedger(Store(store_url)))
        try:
            return await scorer.score([bare, broken])
        finally:
            await scorer.aclose()

    by = {(s.trace_id, s.metric): s for s in asyncio.run(score())}
    assert not judge_server.arrivals
    lacking = by[("f" * 32, "faithfulness")]
    assert lacking.score is None and lacking.error_kind == "input"
    assert "retrieved_contexts" in (lacking.reason or "")
    assert "query" in (by[("e" * 32, "hit_rate")].reason or "")


def test_concurrent_reservers_never_pass_the_budget(store_url: str) -> None:
    """Two stores (as two replicas), four threads each, race for 50 requests."""
    rule = _rule(max_requests_per_day=50)
    ledgers = [BudgetLedger(Store(store_url)), BudgetLedger(Store(store_url))]
    granted: list[int] = []
    lock = threading.Lock()

    def reserve(ledger: BudgetLedger) -> None:
        mine = 0
        for _ in range(20):
            if ledger.reserve(rule, "2026-11-28", tokens=10) is None:
                mine += 1
        with lock:
            granted.append(mine)

    threads = [threading.Thread(target=reserve, args=(ledgers[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(granted) == 50  # 160 tries, exactly the budget granted
    spent = ledgers[0].spent("prod", "2026-11-28")
    assert (spent.requests, spent.tokens) == (50, 500)
    assert ledgers[1].spent("prod", "2026-11-29").requests == 0  # a new day, a new budget


def test_the_loop_scores_each_trace_once_across_looks_and_restarts(
    store_url: str, judge_server: ScriptedJudgeServer
) -> None:
    settings = _settings(store_url, judge_server, score_batch=4)
    store = Store(store_url)
    source = MemoryTraces()
    rule = _rule(metrics=["hit_rate"], judge=None, delay_seconds=10)
    for i in range(10):
        source.add(_trace(i), updated_ns=1_000 + i)
    source.add(_trace(99), updated_ns=1_500)
    incomplete = TraceRecord(**{**_trace(50).__dict__, "complete": False})
    source.add(incomplete, updated_ns=1_200)

    def scoring() -> OnlineScoring:
        return OnlineScoring(
            source, lambda: [rule], RuleStore(store), BudgetLedger(store), lambda: settings
        )

    async def looks() -> list[int]:
        first = scoring()
        counts = [await first.look(now_ns=1_006 + 10 * 10**9)]  # delay: traces to 1_006 only
        counts.append(await first.look(now_ns=1_006 + 10 * 10**9))
        await first.aclose()
        second = scoring()  # a restarted server
        counts.append(await second.look(now_ns=2_000 + 10 * 10**9))
        counts.append(await second.look(now_ns=2_000 + 10 * 10**9))
        await second.aclose()
        return counts

    assert asyncio.run(looks()) == [7, 0, 4, 0]
    scored = [s.trace_id for s in source.scores()]
    assert len(scored) == len(set(scored)) == 11
    assert f"{50:032x}" not in scored  # not complete: never handed out
    assert RuleStore(store).scored() == {"prod": 11}


def test_score_traces_applies_rules_now(store_url: str, judge_server: ScriptedJudgeServer) -> None:
    """Traces given in Python (with their spans) scored by rules at once, as from a file."""
    from ragmeter.runs.online import PendingTrace, score_traces
    from ragmeter.traces import SpanRecord

    settings = _settings(store_url, judge_server)

    def span(i: int, kind: str) -> SpanRecord:
        return SpanRecord(
            trace_id=f"{i:032x}", span_id=f"{i:016x}", parent_id=None, name="s", kind=kind,
            start_ns=0, end_ns=1, status="ok",
        )  # fmt: skip

    items = [
        PendingTrace(_trace(i), (span(i, "RETRIEVER" if i < 2 else "LLM"),), 0) for i in range(4)
    ]
    retrieval = _rule(name="retrieval", metrics=["mrr"], judge=None, span_kind="retriever")
    paused = _rule(name="paused", enabled=False)
    scores = score_traces(items, [retrieval, paused], settings)
    assert sorted((s.trace_id, s.metric, s.score) for s in scores) == [
        (f"{0:032x}", "mrr", 1.0),
        (f"{1:032x}", "mrr", 1.0),
    ]
    assert not judge_server.arrivals


def test_the_last_requests_of_a_budget_finish_traces(
    store_url: str, judge_server: ScriptedJudgeServer
) -> None:
    """Judged traces go a chunk at a time, sized by what a trace took (two requests for
    faithfulness), so a budget of 10 judges 5 traces whole instead of starting 10."""
    settings = _settings(store_url, judge_server)
    rule = _rule(metrics=["faithfulness"], max_requests_per_day=10)

    async def score() -> list[Any]:
        scorer = RuleScorer(rule, settings, BudgetLedger(Store(store_url)))
        try:
            return await scorer.score([_trace(i) for i in range(30)])
        finally:
            await scorer.aclose()

    scores = asyncio.run(score())
    assert len(judge_server.arrivals) == 10
    assert len([s for s in scores if s.score is not None]) == 5
    assert all((s.reason or "").startswith("skipped:") for s in scores if s.score is None)


def test_a_budget_of_n_requests_judges_exactly_the_whole_traces_it_pays_for(
    store_url: str, judge_server: ScriptedJudgeServer
) -> None:
    """Faithfulness takes two requests a trace: a budget of 7 requests judges 3 traces whole
    across small batches (the fourth would be cut off halfway, so its request is not sent),
    no batch starts with a blind guess of several traces, and a new scorer (a restart)
    takes a trace's cost from the day's ledger rather than start one it cannot finish."""
    settings = _settings(store_url, judge_server)
    ledger = BudgetLedger(Store(store_url))
    rule = _rule(metrics=["faithfulness"], max_requests_per_day=7)
    traces = [_trace(i) for i in range(12)]

    async def score(batches: list[list[TraceRecord]]) -> list[Any]:
        scorer = RuleScorer(rule, settings, ledger)
        try:
            return [s for batch in batches for s in await scorer.score(batch)]
        finally:
            await scorer.aclose()

    scores = asyncio.run(score([traces[:1], traces[1:3]]))  # 1 trace, then 2: 6 requests
    scores += asyncio.run(score([traces[3:6], traces[6:]]))  # a restart: 1 request left
    judged = [s for s in scores if s.score is not None]
    assert len(judged) == 3 == len({s.trace_id for s in judged})
    assert len(judge_server.arrivals) == 6 == ledger.spent("prod", utc_day()).requests
    nulls = [s for s in scores if s.score is None]
    assert len(nulls) == 9
    assert all((s.reason or "").startswith("skipped:") for s in nulls)  # none cut off halfway
    assert "a trace takes 2.0 requests" in (nulls[-1].reason or "")


def test_two_replicas_never_score_a_batch_twice(
    store_url: str, judge_server: ScriptedJudgeServer
) -> None:
    """Two servers' scorers (each its own store connection) look at once, again and again:
    each trace is taken by one of them exactly once."""
    settings = _settings(store_url, judge_server, score_batch=3)
    source = MemoryTraces()
    for i in range(20):
        source.add(_trace(i), updated_ns=1_000 + i)
    rule = _rule(metrics=["hit_rate"], judge=None, delay_seconds=0)

    def replica() -> OnlineScoring:
        store = Store(store_url)
        return OnlineScoring(
            source, lambda: [rule], RuleStore(store), BudgetLedger(store), lambda: settings
        )

    async def race() -> list[int]:
        one, two = replica(), replica()
        counts: list[int] = []
        for _ in range(10):
            counts += await asyncio.gather(one.look(), two.look())
        await one.aclose()
        await two.aclose()
        return counts

    assert sum(asyncio.run(race())) == 20
    assert RuleStore(Store(store_url)).scored() == {"prod": 20}
    assert BudgetLedger(Store(store_url)).spent("prod", utc_day()).traces == 20


def test_a_batch_that_outlasts_the_lease_is_not_taken_by_another_replica(
    store_url: str,
) -> None:
    """A judge slower than the lease (a rate-limited model, a batch of 200 traces): the
    replica scoring keeps renewing its hold, so the other never takes the same batch and
    its traces are judged (and paid for) once."""
    with ScriptedJudgeServer(latency_ms=500) as slow:
        settings = _settings(store_url, slow, score_batch=2)
        source = MemoryTraces()
        for i in range(4):
            source.add(_trace(i), updated_ns=1_000 + i)
        rule = _rule(metrics=["faithfulness"], delay_seconds=0)

        def replica() -> OnlineScoring:
            store = Store(store_url)
            return OnlineScoring(
                source, lambda: [rule], RuleStore(store), BudgetLedger(store), lambda: settings,
                lease_s=0.4,
            )  # fmt: skip

        async def race() -> list[int]:
            one, two = replica(), replica()
            first = asyncio.create_task(one.look())
            counts: list[int] = []
            while not first.done():
                counts.append(await two.look())
                await asyncio.sleep(0.1)
            counts.append(await first)
            await one.aclose()
            await two.aclose()
            return counts

        assert sum(asyncio.run(race())) == 4
    assert BudgetLedger(Store(store_url)).spent("prod", utc_day()).traces == 4
