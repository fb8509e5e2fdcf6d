"""The monitor as the API answers it, over a real store (SQLite, then PostgreSQL): buckets of
production scores, drift of the last window against the window before it or against a
stored offline run's scores, and clear refusals; and the server's background evaluation of
alert rules posting to a real webhook receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from ragmeter.config import load_settings
from ragmeter.errors import ConfigError, NotFoundError
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.reports.monitor import drift
from ragmeter.reports.record import ResultRecord
from ragmeter.runs.monitor.store import AlertStore
from ragmeter.runs.monitor.view import MonitorAsk, monitor
from ragmeter.service.app import create_app
from ragmeter.service.routes.monitor import watch_alerts
from ragmeter.service.state import Services
from tests.integration.helpers import stored_run
from tests.integration.score_reader import HOUR_NS, NOW, Scores
from tests.security.listener import Listener

pytestmark = pytest.mark.usefixtures("store_home")  # each test on SQLite and on PostgreSQL


def _production(rng: np.random.Generator, drop: float) -> Scores:
    """A day of hourly faithfulness scores, the last hour lowered by ``drop``, 5% null."""
    scores = Scores(metrics=("faithfulness",))
    for hour in range(23, -1, -1):
        values = rng.beta(8, 2, 120) - (drop if hour == 0 else 0.0)
        values[rng.random(120) < 0.05] = np.nan
        scores.hour(NOW - hour * HOUR_NS, values)
    return scores


def _run(scores: list[float]) -> str:
    rows = [{"query": f"q{i}", "response": "a"} for i in range(len(scores))]
    records = [
        ResultRecord(i, "faithfulness", s, None, None, None, None, None, 0, f"q{i}", rows[i])
        for i, s in enumerate(scores)
    ]
    return stored_run(rows, ["faithfulness"], records)[1]


def test_buckets_and_a_drop_against_the_window_before(store_url: str) -> None:
    scores = _production(np.random.default_rng(1), drop=0.2)
    store = KnowledgeBase().store
    ask = MonitorAsk(metrics=("faithfulness",), since_ns=NOW - 24 * HOUR_NS, until_ns=NOW)
    found = monitor(ask, scores, store, now_ns=NOW + 5 * HOUR_NS)
    (metric,) = found.metrics
    assert len(metric.buckets) == 24 and sum(b.n + b.nulls for b in metric.buckets) == 24 * 120
    assert metric.buckets[-1].mean < metric.buckets[0].mean - 0.1  # type: ignore[operator]
    assert metric.drift is not None and metric.drift.verdict == "worse"
    assert metric.drift.family == 1 and metric.drift.ci_high < 0
    # the same numbers as the statistics module gives for those two windows
    times, values = scores.times, scores.values
    recent = values[(times >= NOW - HOUR_NS) & ~np.isnan(values)]
    before = values[(times < NOW - HOUR_NS) & ~np.isnan(values)]
    expected = drift({"faithfulness": (recent, before)})["faithfulness"]
    assert metric.drift.p_value == expected.p_value and metric.drift.delta == expected.delta


def test_a_steady_metric_shows_no_evidence_of_a_difference(store_url: str) -> None:
    scores = _production(np.random.default_rng(2), drop=0.0)
    ask = MonitorAsk(metrics=("faithfulness", "never_scored"), bucket="day", window="2h")
    found = monitor(ask, scores, KnowledgeBase().store, now_ns=NOW)
    steady, missing = found.metrics
    assert steady.drift is not None and steady.drift.verdict == "no_evidence"
    assert missing.drift is None and missing.buckets == []
    assert missing.note == "no drift test: the recent window has no scored value of never_scored"


def test_against_a_stored_offline_run(store_url: str) -> None:
    rng = np.random.default_rng(3)
    run_id = _run(list(rng.beta(8, 2, 300)))
    scores = _production(rng, drop=0.15)
    ask = MonitorAsk(metrics=("faithfulness",), baseline=f"run:{run_id}", until_ns=NOW)
    (metric,) = monitor(ask, scores, KnowledgeBase().store, now_ns=NOW).metrics
    assert metric.drift is not None and metric.drift.baseline_n == 300
    assert metric.drift.verdict == "worse"
    with pytest.raises(NotFoundError, match="baseline: no run 'nope'"):
        monitor(
            MonitorAsk(("faithfulness",), baseline="run:nope"), scores, KnowledgeBase().store, NOW
        )


@pytest.mark.parametrize(
    ("ask", "says"),
    [
        (MonitorAsk(metrics=()), "name 1 to 20 metrics"),
        (MonitorAsk(("m",), baseline="yesterday"), "choose 'window' or 'run:RUN_ID'"),
        (MonitorAsk(("m",), window="2d"), "leaves no time between since and it"),
        (MonitorAsk(("m",), window="1w"), "not a number of minutes"),
        (MonitorAsk(("m",), since_ns=NOW, until_ns=NOW), "since: must be before until"),
        (MonitorAsk(("m",), alpha=1.5), "alpha"),
        (MonitorAsk(("m",), since_ns=NOW - 2_000 * HOUR_NS, until_ns=NOW), "at most 1000"),
    ],
)
def test_bad_asks_say_what_is_wrong(store_url: str, ask: MonitorAsk, says: str) -> None:
    reader = Scores()
    reader.hour(NOW - 1_998 * HOUR_NS, np.array([0.5]))  # 2,000 hours apart: too many buckets
    reader.hour(NOW, np.array([0.5]))
    with pytest.raises(ConfigError, match=says):
        monitor(ask, reader, KnowledgeBase().store, NOW)


def test_a_range_of_too_many_buckets_is_refused_before_any_score_is_read(
    store_url: str,
) -> None:
    """A year in hours is 8,760 buckets: refused naming the cap, whatever the range holds,
    and no score of it is read (a request cannot make the server load a year of scores)."""
    reader = Scores()
    ask = MonitorAsk(("m",), since_ns=NOW - 8_760 * HOUR_NS, until_ns=NOW)
    with pytest.raises(ConfigError, match="8760 hour buckets; at most 1000"):
        monitor(ask, reader, KnowledgeBase().store, NOW)
    assert reader.asked == []
    days = MonitorAsk(("m",), bucket="day", since_ns=NOW - 365 * 24 * HOUR_NS, until_ns=NOW)
    assert monitor(days, reader, KnowledgeBase().store, NOW).metrics[0].buckets == []


@pytest.fixture
def listener() -> Iterator[Listener]:
    with Listener() as found:
        yield found


def test_the_server_loop_fires_a_rule_once(
    store_url: str, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The background evaluation, as ``ragmeter serve`` runs it every
    ``alert_every_seconds``, over scores that keep dropping: one webhook."""
    settings = load_settings()
    online = settings.online.model_copy(
        update={"alert_every_seconds": 1.0, "allow_webhook_hosts": ["127.0.0.1/32"]}
    )
    services = Services.open(settings.model_copy(update={"online": online}))
    scores = Scores()
    now = time.time_ns()
    scores.hour(now + HOUR_NS // 2, np.full(60, 0.3))  # the last half hour, and beyond
    services.score_reader = scores
    AlertStore(services.kb.store).add(
        "drop", "faithfulness.mean < 0.5 over 1h with n >= 20", listener.url("/ask?loop")
    )

    async def serve_a_while() -> None:
        task = asyncio.get_running_loop().create_task(watch_alerts(services))
        await asyncio.sleep(3.5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(serve_a_while())
    services.manager.shutdown()
    posts = [json.loads(s.body) for s in listener.seen if s.path == "/ask?loop"]
    assert [p["status"] for p in posts] == ["firing"] and len(scores.asked) >= 2
    (event,) = AlertStore(services.kb.store).events()
    assert event.fired_delivery == "sent: HTTP 200" and event.resolved_at is None


@pytest.fixture
def far_east() -> Iterator[None]:
    """The process's local time zone UTC+8 for the test (a server's host is anywhere)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Shanghai"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


async def test_times_without_an_offset_are_utc_on_a_host_in_any_zone(
    store_url: str, far_east: None
) -> None:
    """``since``/``until`` without an offset are UTC, as the buckets are: a server whose
    host runs at UTC+8 read them 8 hours early."""
    api = create_app(load_settings())
    transport = httpx.ASGITransport(app=api)
    ask = {"metric": "faithfulness", "since": "2026-11-20T00:00:00", "until": "2026-11-21T00:00"}
    async with (
        api.router.lifespan_context(api),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1/api/v2/serve") as http,
    ):
        naive = (await http.get("/online/monitor", params=ask)).json()["data"]
        zoned = {**ask, "since": "2026-11-20T08:00:00+08:00", "until": "2026-11-21T00:00:00Z"}
        offset = (await http.get("/online/monitor", params=zoned)).json()["data"]
    assert naive["since"].startswith("2026-11-20T00:00:00")
    assert naive["until"].startswith("2026-11-21T00:00:00")
    assert [naive["since"], naive["until"]] == [offset["since"], offset["until"]]


async def test_a_range_of_more_scores_than_the_cap_is_refused_naming_it(store_url: str) -> None:
    """An attacker's (or a careless) monitor over a long busy range: the scores one metric
    reads at once are capped (``[online] max_monitor_scores``), past it 413 naming the cap,
    never a server that reads them all; a range under the cap is answered."""
    scores = Scores(metrics=("faithfulness",))
    scores.hour(NOW, np.full(8, 0.9))
    settings = load_settings()
    online = settings.online.model_copy(update={"max_monitor_scores": 5})
    api = create_app(settings.model_copy(update={"online": online}))
    transport = httpx.ASGITransport(app=api)
    day = {
        "metric": "faithfulness",
        "since": _iso(NOW - HOUR_NS),
        "until": _iso(NOW),
        "window": "5m",
    }
    short = {**day, "since": _iso(NOW - HOUR_NS // 4)}
    async with (
        api.router.lifespan_context(api),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1/api/v2/serve") as http,
    ):
        refused = await http.get("/online/monitor", params=day)
        answered = await http.get("/online/monitor", params=short)
    assert refused.status_code == 413, refused.text
    assert "[online] max_monitor_scores" in refused.text
    assert answered.status_code == 200, answered.text
    (metric,) = answered.json()["data"]["metrics"]
    kept = (scores.times >= NOW - HOUR_NS // 4) & (scores.times < NOW)
    assert sum(b["n"] for b in metric["buckets"]) == int(kept.sum()) > 0


def _iso(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns / 1e9))
