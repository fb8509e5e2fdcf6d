"""Online rules in the Monitor view, in real Chromium over a real ``ragmeter serve`` with
users: traces sent to the OTLP receiver; a member makes a rule with the form (the API's
validation errors shown next to the field they name), the server's scorer scores the traces
with it and the Monitor shows its metric, the member changes it and deletes it; the rule of
ragmeter.toml is read-only; a viewer is offered no form, and the API's 403 shows when the
form is forced open. English and Chinese screenshots."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import page_errors, sign_in
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data
from tests.integration.trace_bodies import export, post, span, traces

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]
RULES = "/api/v2/serve/online/rules"
CONFIG = """
[online]
score_every_seconds = 0.2

[[online.rules]]
name = "retrieval"
service = "parcel-bot"
metrics = ["hit_rate"]
"""
SHOP = 5  # traces of service "shop", each with a question and its answer
Served = tuple[ServiceProcess, dict[str, str]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("dashboard-rules")
    (home / "ragmeter.toml").write_text(CONFIG, encoding="utf-8")
    server, keys = users_server(home, extra=(("collector", "ingest"),))
    try:
        with as_user(server, keys["collector"]) as sender:
            spans = [span(700 + n, 1, query=f"where is parcel {n}?") for n in range(SHOP)]
            assert post(sender, export(spans, service="shop")).status_code == 200
        with as_user(server, keys["admin"]) as admin:
            assert len(traces(admin, SHOP, complete=True)) == SHOP
        yield server, keys
    finally:
        server.stop()


def _rule(server: ServiceProcess, key: str, name: str) -> Any:
    with as_user(server, key) as http:
        return data(http.get(f"{RULES}/{name}"))


def _wait_scored(server: ServiceProcess, key: str, name: str, want: int) -> None:
    deadline = time.monotonic() + 60
    while _rule(server, key, name)["traces_scored"] < want:
        assert time.monotonic() < deadline, f"rule {name} did not score {want} traces"
        time.sleep(0.2)


def _field_error(page: Page, name: str) -> Any:
    return page.locator(f'#rule-form [data-field="{name}"] .error')


def test_a_member_makes_changes_and_deletes_a_rule(
    page: Page, served: Served, shoot: Shoot
) -> None:
    server, keys = served
    errors = page_errors(page)
    sign_in(page, server, keys["member"])
    page.get_by_role("link", name="Monitor").click()
    toml_rule = page.locator('#monitor-rules tr[data-rule="retrieval"]')
    expect(toml_rule).to_contain_text("read-only: change it in ragmeter.toml")
    expect(toml_rule.get_by_role("button")).to_have_count(0)
    page.get_by_role("button", name="New online rule").click()
    expect(page).to_have_url(re.compile(r"#/monitor\?rule=new$"))
    page.get_by_label("Name", exact=True).fill("answers")
    page.get_by_label("Metrics").fill("answered, faithfulness")
    page.get_by_label("Service").fill("shop")
    page.get_by_label("Sample rate (0–1)").fill("2")
    page.get_by_label("Delay (seconds)").fill("0")
    page.get_by_role("button", name="Create rule").click()
    # the API's own message, next to the field it names
    expect(_field_error(page, "sample_rate")).to_contain_text("less than or equal to 1")
    expect(page.get_by_label("Sample rate (0–1)")).to_have_attribute("aria-invalid", "true")
    expect(_field_error(page, "metrics")).to_be_hidden()
    page.get_by_label("Sample rate (0–1)").fill("1")
    page.get_by_role("button", name="Create rule").click()
    expect(_field_error(page, "judge")).to_contain_text("faithfulness need a judge")
    expect(_field_error(page, "sample_rate")).to_be_hidden()
    shoot(page, "dashboard-rules-form-errors-en")
    page.get_by_label("Metrics").fill("answered")
    page.get_by_role("button", name="Create rule").click()
    expect(page.locator("#rule-form")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"#/monitor$"))
    row = page.locator('#monitor-rules tr[data-rule="answers"]')
    for text in ("API", "service shop", "answered", "100%", "0 s"):
        expect(row).to_contain_text(text)
    # the server's scorer scores the shop's traces with it; the Monitor shows the metric
    _wait_scored(server, keys["member"], "answers", SHOP)
    page.reload()
    expect(row.locator('[data-col="scored"]')).to_have_text(str(SHOP))
    card = page.locator('.monitor-card[data-metric="answered"]')
    expect(card.locator("svg.series circle.mean")).to_have_count(1)
    assert card.locator('table.buckets td[data-col="n"]').all_text_contents() == [str(SHOP)]
    with as_user(server, keys["member"]) as http:
        listed = data(http.get("/api/v2/serve/traces", params={"service": "shop"}))["items"]
    found = [(s["metric"], s["score"]) for tr in listed for s in tr["scores"]]
    assert found == [("answered", 1.0)] * SHOP
    shoot(page, "dashboard-rules-en")
    # change it: the form holds the rule, its name fixed
    row.get_by_role("button", name="Edit").click()
    expect(page).to_have_url(re.compile(r"#/monitor\?rule=edit%3Aanswers$"))
    expect(page.get_by_label("Name", exact=True)).to_have_value("answers")
    expect(page.get_by_label("Name", exact=True)).to_have_attribute("readonly", "")
    expect(page.get_by_label("Metrics")).to_have_value("answered")
    page.get_by_label("Filters").fill("session_id exists\nlatency_ms lt 5000")
    page.get_by_label("Delay (seconds)").fill("5")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#rule-form")).to_have_count(0)
    expect(row.locator('[data-col="delay"]')).to_have_text("5 s")
    expect(row.locator('[data-col="which"]')).to_have_text(
        "service shop · session_id exists · latency_ms lt 5000"
    )
    changed = _rule(server, keys["member"], "answers")["rule"]
    assert changed["delay_seconds"] == 5 and changed["filters"] == [
        {"field": "session_id", "op": "exists", "value": None},
        {"field": "latency_ms", "op": "lt", "value": 5000},
    ]
    # in Chinese, the form open
    page.get_by_label("Language").select_option("zh")
    row.get_by_role("button", name="修改").click()
    expect(page.locator("#rule-form h3")).to_have_text("修改规则 answers")
    expect(page.get_by_label("抽样比例（0–1）")).to_have_value("1")
    shoot(page, "dashboard-rules-form-zh")
    page.get_by_role("button", name="取消").click()
    expect(page.locator("#rule-form")).to_have_count(0)
    expect(toml_rule).to_contain_text("只读：请在 ragmeter.toml 中修改")
    shoot(page, "dashboard-rules-zh")
    page.get_by_label("语言").select_option("en")
    # delete it, with a second click
    row.get_by_role("button", name="Delete").click()
    page.get_by_role("button", name="Delete answers").click()
    expect(row).to_have_count(0)
    expect(page.locator("#monitor-rules tbody tr")).to_have_count(1)
    with as_user(server, keys["member"]) as http:
        assert http.get(f"{RULES}/answers").status_code == 404
    assert errors == []


def test_a_viewer_is_offered_no_form_and_sees_the_refusal(
    page: Page, served: Served, shoot: Shoot
) -> None:
    server, keys = served
    errors = page_errors(page)
    with as_user(server, keys["viewer"]) as http:
        refused = http.post(RULES, json={"name": "mine", "metrics": ["answered"]})
    assert refused.status_code == 403
    sign_in(page, server, keys["viewer"])
    page.goto(f"{server.url}/#/monitor")
    expect(page.locator('#monitor-rules tr[data-rule="retrieval"]')).to_be_visible()
    expect(page.locator("#new-rule")).to_have_count(0)
    expect(page.locator("#monitor-rules").get_by_role("button")).to_have_count(0)
    # forced open by its URL: the server refuses, the page says so
    page.goto(f"{server.url}/#/monitor?rule=new")
    page.reload()
    page.get_by_label("Name", exact=True).fill("mine")
    page.get_by_label("Metrics").fill("answered")
    page.get_by_role("button", name="Create rule").click()
    expect(page.locator("#rf-error")).to_have_text(refused.json()["err_msg"])
    shoot(page, "dashboard-rules-viewer-en")
    with as_user(server, keys["viewer"]) as http:
        assert [r["rule"]["name"] for r in data(http.get(RULES))] == ["retrieval"]
    assert errors == []
