"""The Monitor view in real Chromium over a real ``ragmeter serve`` with users: production
traces sent to the OTLP receiver, scored over the last half day (a quality drop in the last
hour), online rules of ragmeter.toml and of the API, an alert rule that fires on the drop;
the view draws each metric's hour and day buckets with their intervals and n (few values
flagged), gives the drift verdicts against the earlier window and against a stored run, the
rules with their budgets, and the alert rules with their episodes. English and Chinese
screenshots."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ragmeter.runs.storage.traces import TraceStore
from ragmeter.store.db import Store
from ragmeter.traces.records import TraceScore
from tests.browser.helpers import page_errors, sign_in
from tests.integration.helpers import scripted_home
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, run_rows
from tests.integration.trace_bodies import export, post, span, tid

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]
HOUR = 3_600 * 10**9
MONITOR = "/api/v2/serve/online/monitor"
CONFIG = """
[online]
alert_every_seconds = 1

[[online.rules]]
name = "grounded"
metrics = ["faithfulness"]
judge = "scripted"
sample_rate = 0.1
max_requests_per_day = 500
max_tokens_per_day = 200000

[[online.rules]]
name = "retrieval"
service = "parcel-bot"
metrics = ["hit_rate"]
"""
#: scores per hour, by hours ago (the 3rd hour back holds enough for an informative interval)
PER_HOUR = {h: 40 if h == 3 else 6 for h in range(2, 13)}
RECENT = 40  # scores in the last hour, after the drop
ALERT = "faithfulness.mean < 0.8 over 1h with n >= 30"
Served = tuple[ServiceProcess, dict[str, str], str]


def _times(now: int) -> tuple[list[int], list[int]]:
    """When each earlier score and each recent score was given (ns)."""
    # each hour's scores inside one UTC hour bucket, whatever the minute the test runs at
    start = {h: (now - h * HOUR) // HOUR * HOUR for h in PER_HOUR}
    earlier = [start[h] + i * (HOUR // 50) for h, n in PER_HOUR.items() for i in range(n)]
    recent = [now - 50 * 60 * 10**9 + i * 60 * 10**9 for i in range(RECENT)]
    return earlier, recent


def _send_and_score(server: ServiceProcess, key: str) -> None:
    """One trace per score time, sent to the receiver; the scores an online rule's scorer
    writes: faithfulness about 0.85 before, about 0.3 in the last hour; hit_rate 0.75 in
    both."""
    now = time.time_ns()
    earlier, recent = _times(now)
    stamps = earlier + recent
    spans = [
        span(1000 + n, 1, query=f"question {n}", start=at - 10**9) for n, at in enumerate(stamps)
    ]
    with as_user(server, key) as sender:
        assert post(sender, export(spans, service="parcel-bot")).status_code == 200
    scores = []
    for n, at in enumerate(stamps):
        good = n < len(earlier)
        value = (0.8 + 0.05 * (n % 3)) if good else (0.2 + 0.1 * (n % 3))
        scores.append(
            TraceScore(tid(1000 + n), "faithfulness", value, rule="grounded", scored_ns=at)
        )
        scores.append(
            TraceScore(
                tid(1000 + n),
                "hit_rate",
                0.0 if n % 4 == 0 else 1.0,
                rule="retrieval",
                scored_ns=at,
            )
        )
    _wait_stored(server, len(stamps))
    store = Store(server.store_url)
    try:
        TraceStore(store).put_scores(scores)
    finally:
        store.close()


def _wait_stored(server: ServiceProcess, want: int) -> None:
    store = Store(server.store_url)
    try:
        deadline = time.monotonic() + 60
        while TraceStore(store).list(limit=1)[1] < want:
            assert time.monotonic() < deadline, "the receiver did not store every trace"
            time.sleep(0.2)
    finally:
        store.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("dashboard-monitor")
    with scripted_home(home, CONFIG):
        server, keys = users_server(home, extra=(("collector", "ingest"),))
        try:
            _send_and_score(server, keys["collector"])
            with as_user(server, keys["member"]) as member:
                rule = {"name": "tools", "metrics": ["tool_call_f1"], "span_kind": "TOOL"}
                data(member.post("/api/v2/serve/online/rules", json=rule), 201)
            with server.client(keys["member"]) as http:  # every retrieval hit: a better past
                rows = [
                    {"query": f"q{i}", "retrieved_ids": ["a", "b"], "reference_ids": ["a"]}
                    for i in range(40)
                ]
                run_id = run_rows(http, "retrieval-baseline", rows, ["hit_rate"])["run_id"]
            with as_user(server, keys["admin"]) as admin:
                data(
                    admin.post(
                        "/api/v2/serve/online/alerts",
                        json={"name": "low-faithfulness", "expression": ALERT},
                    ),
                    201,
                )
                _wait_fired(admin)
            yield server, keys, run_id
        finally:
            server.stop()


def _wait_fired(admin: Any) -> None:
    deadline = time.monotonic() + 60
    while not data(admin.get("/api/v2/serve/online/alert-events")):
        assert time.monotonic() < deadline, "the alert did not fire"
        time.sleep(0.3)


def _monitor(server: ServiceProcess, key: str, **params: Any) -> Any:
    with as_user(server, key) as http:
        return data(
            http.get(
                MONITOR, params={"metric": ["faithfulness", "hit_rate", "tool_call_f1"], **params}
            )
        )


def _card_matches(page: Page, metric: dict[str, Any]) -> None:
    """The card of ``metric`` (the API's answer) draws each bucket, hollow where few, and
    lists each bucket's n."""
    card = page.locator(f'.monitor-card[data-metric="{metric["metric"]}"]')
    buckets = metric["buckets"]
    expect(card.locator("svg.series circle.mean")).to_have_count(len(buckets))
    small = sum(1 for b in buckets if b["small_sample"])
    expect(card.locator("svg.series circle.mean.small")).to_have_count(small)
    ns = card.locator('table.buckets td[data-col="n"]').all_text_contents()
    assert ns == [str(b["n"]) for b in reversed(buckets)]
    assert card.locator(".ci-note").count() == small


def test_the_monitor_shows_series_drift_rules_and_alerts(
    page: Page, served: Served, shoot: Shoot
) -> None:
    server, keys, run_id = served
    errors = page_errors(page)
    sign_in(page, server, keys["viewer"])
    page.get_by_role("link", name="Monitor").click()
    expect(page.locator("h1")).to_have_text("Monitor")
    answer = _monitor(server, keys["viewer"])
    expect(page.locator(".monitor-card")).to_have_count(3)
    faithfulness, hit_rate, tools = answer["metrics"]
    assert tools["buckets"] == [] and tools["drift"] is None
    assert len(faithfulness["buckets"]) >= 12 and any(
        not b["small_sample"] for b in faithfulness["buckets"]
    )
    for metric in (faithfulness, hit_rate):
        _card_matches(page, metric)
    expect(page.locator('.monitor-card[data-metric="tool_call_f1"]')).to_contain_text(
        "No score in this time range."
    )
    # drift of the last hour against the hours before it: Compare's verdicts
    drift = page.locator("#monitor-drift")
    expect(drift.locator('tr[data-metric="faithfulness"] [data-verdict]')).to_have_text("▼ worse")
    assert (
        faithfulness["drift"]["verdict"] == "worse"
        and hit_rate["drift"]["verdict"] == "no_evidence"
    )
    expect(drift.locator('tr[data-metric="hit_rate"] [data-verdict]')).to_have_text(
        "· no evidence of a difference"
    )
    recent = faithfulness["drift"]
    expect(drift.locator('tr[data-metric="faithfulness"]')).to_contain_text(
        f"{recent['recent_mean']:.3f} (n={RECENT})"
    )
    expect(drift.locator("#drift-correction")).to_contain_text(
        "Bonferroni-adjusted p-values, corrected together for the 2 metrics"
    )
    # the rules, with their budgets and traces scored
    rules = page.locator("#monitor-rules tbody tr")
    expect(rules).to_have_count(3)
    grounded = page.locator('tr[data-rule="grounded"]')
    for text in ("ragmeter.toml", "scripted", "10%"):
        expect(grounded).to_contain_text(text)
    expect(grounded.locator('[data-col="requests"]')).to_contain_text("0 of 500")
    expect(grounded.locator('[data-col="tokens"]')).to_contain_text("0 of 200000")
    expect(page.locator('tr[data-rule="retrieval"]')).to_contain_text("service parcel-bot")
    expect(page.locator('tr[data-rule="tools"]')).to_contain_text("with a TOOL span")
    expect(grounded.locator('[data-col="actions"]')).to_have_text(
        "read-only: change it in ragmeter.toml"
    )
    expect(page.locator('tr[data-rule="tools"] [data-col="actions"]')).to_have_text("by member")
    expect(page.locator("#new-rule")).to_have_count(0)  # a viewer makes no rule
    expect(page.locator("#monitor-rules")).not_to_contain_text("null")
    # the alert rule fired once, on the drop
    expect(page.locator('tr[data-alert="low-faithfulness"]')).to_contain_text("firing")
    events = page.locator("#monitor-alerts tr[data-event]")
    expect(events).to_have_count(1)
    expect(events.first).to_contain_text(re.compile(r"0\.\d{3} \(n=\d+\)"))
    shoot(page, "dashboard-monitor-en")
    # day buckets
    page.get_by_label("Buckets", exact=True).select_option("day")
    expect(page).to_have_url(re.compile(r"#/monitor\?bucket=day"))
    by_day = _monitor(server, keys["viewer"], bucket="day")
    expect(
        page.locator('.monitor-card[data-metric="faithfulness"] svg.series circle.mean')
    ).to_have_count(len(by_day["metrics"][0]["buckets"]))
    _card_matches(page, by_day["metrics"][0])
    # against a stored run: every hit there, a quarter missed now
    page.get_by_label("Drift against").select_option(f"run:{run_id}")
    expect(drift.locator('tr[data-metric="hit_rate"] [data-verdict]')).to_have_text("▼ worse")
    against_run = _monitor(server, keys["viewer"], bucket="day", baseline=f"run:{run_id}")
    assert against_run["metrics"][1]["drift"]["verdict"] == "worse"
    expect(drift.locator('tr[data-metric="faithfulness"]')).to_contain_text(
        against_run["metrics"][0]["note"]
    )
    shoot(page, "dashboard-monitor-run-en")
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("h1")).to_have_text("线上监控")
    expect(drift.locator('tr[data-metric="hit_rate"] [data-verdict]')).to_have_text("▼ 更差")
    expect(page.locator('tr[data-alert="low-faithfulness"]')).to_contain_text("告警中")
    shoot(page, "dashboard-monitor-run-zh")
    page.get_by_label("时间粒度", exact=True).select_option("hour")
    page.get_by_label("漂移对照").select_option("window")
    expect(drift.locator('tr[data-metric="faithfulness"] [data-verdict]')).to_have_text("▼ 更差")
    expect(drift.locator('tr[data-metric="tool_call_f1"]')).to_contain_text("无法做漂移检验")
    expect(page.locator("tr[data-event]").first.locator("td").last).to_have_text("无")
    shoot(page, "dashboard-monitor-zh")
    page.get_by_label("语言").select_option("en")
    assert errors == []
