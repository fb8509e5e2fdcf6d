"""Reviewers' flags on production traces in real Chromium over a real ``ragmeter serve`` with
users: a reviewer flags a trace from its page (a label and a note) and changes it, a member
flags it and another one, each sees who flagged and removes only their own flag, a viewer
reads the flags and is offered no form; the Traces list marks flagged rows and filters by
flags, and a member saves the flagged selection as a dataset version of exactly those rows;
an admin removes another user's flag. English and Chinese screenshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import page_errors, sign_in
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data
from tests.integration.trace_bodies import NOW, export, post, span, tid, traces

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]
Served = tuple[ServiceProcess, dict[str, str]]
COUNT = 5  # traces 700..704, one question each
NOTE = "Quotes last year's refund window (30 days, now 14)."


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("dashboard-trace-flags")
    server, keys = users_server(home)
    try:
        spans = [
            span(700 + n, 1, query=f"refund question {n}", start=NOW - n * 10**9)
            for n in range(COUNT)
        ]
        with as_user(server, keys["ingest"]) as sender, as_user(server, keys["admin"]) as admin:
            assert post(sender, export(spans)).status_code == 200
            assert len(traces(admin, COUNT)) == COUNT
        yield server, keys
    finally:
        server.stop()


def _rows(page: Page) -> Any:
    return page.locator("#traces-body tbody tr")


def _switch(page: Page, server: ServiceProcess, key: str) -> None:
    """Sign out, then in with ``key`` (signed out first: a sign-out answered after the next
    sign-in would clear its cookie)."""
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    sign_in(page, server, key)


def _flag(page: Page, label: str, note: str = "") -> None:
    page.locator("#flag-label").select_option(label)
    page.locator("#flag-note").fill(note)
    page.locator("#flag-trace").click()


def test_a_reviewer_and_a_member_flag_traces_from_their_pages(
    page: Page, served: Served, shoot: Shoot
) -> None:
    server, keys = served
    errors = page_errors(page)
    sign_in(page, server, keys["reviewer"])
    page.goto(f"{server.url}/#/traces/{tid(700)}")
    panel = page.locator("#trace-flags")
    expect(panel.locator("#flag-list")).to_have_text("No one has flagged this trace.")
    expect(page.locator("#flag-trace")).to_have_text("Flag")
    _flag(page, "needs_review")
    expect(page.locator("#flag-outcome")).to_have_text("Flagged as needs review.")
    _flag(page, "wrong", NOTE)  # the reviewer's flag again: replaced, not added
    expect(page.locator("#flag-outcome")).to_have_text("Flagged as wrong.")
    mine = panel.locator('li[data-user="reviewer"]')
    expect(panel.locator("ul.flags li")).to_have_count(1)
    expect(mine.locator(".badge.flag")).to_have_text("wrong")
    expect(mine.locator(".flag-note")).to_have_text(NOTE)
    expect(page.locator("#flag-trace")).to_have_text("Change my flag")
    expect(page.locator("#flag-note")).to_have_value(NOTE)
    shoot(page, "dashboard-trace-flag-en")
    # a member flags the same trace and another; sees the reviewer's flag, removes only theirs
    _switch(page, server, keys["member"])
    page.goto(f"{server.url}/#/traces/{tid(700)}")
    _flag(page, "good_example", "Polite and short.")
    expect(panel.locator("ul.flags li")).to_have_count(2)
    expect(panel.locator('li[data-user="reviewer"] button.unflag')).to_have_count(0)
    expect(panel.locator('li[data-user="member"] button.unflag')).to_have_text("Remove my flag")
    page.goto(f"{server.url}/#/traces/{tid(702)}")
    _flag(page, "wrong")
    expect(panel.locator('li[data-user="member"]')).to_contain_text("wrong")
    page.goto(f"{server.url}/#/traces/{tid(703)}")
    _flag(page, "other")
    panel.locator('li[data-user="member"] button.unflag').click()
    expect(page.locator("#flag-outcome")).to_have_text("Removed the flag of member.")
    expect(panel.locator("#flag-list")).to_have_text("No one has flagged this trace.")
    # in Chinese
    page.goto(f"{server.url}/#/traces/{tid(700)}")
    page.get_by_label("Language").select_option("zh")
    expect(panel.locator("h2")).to_have_text("标记")
    expect(panel.locator('li[data-user="reviewer"] .badge.flag')).to_have_text("错误")
    expect(page.locator("#flag-trace")).to_have_text("修改我的标记")
    shoot(page, "dashboard-trace-flag-zh")
    page.get_by_label("语言").select_option("en")
    assert errors == []


def test_the_list_marks_filters_and_saves_flagged_traces(
    page: Page, served: Served, shoot: Shoot
) -> None:
    server, keys = served
    flags = (
        ("reviewer", 700, "wrong"),
        ("member", 700, "good_example"),
        ("reviewer", 702, "wrong"),
    )
    for who, n, label in flags:  # as the test before left them (also when run alone)
        with as_user(server, keys[who]) as http:
            data(http.put(f"/api/v2/serve/traces/{tid(n)}/flag", json={"label": label}))
    errors = page_errors(page)
    sign_in(page, server, keys["member"])
    page.goto(f"{server.url}/#/traces")
    expect(_rows(page)).to_have_count(COUNT)
    marker = page.locator(f'tr[data-trace="{tid(700)}"] .flag-marker')
    expect(marker).to_have_text("⚑ 2")
    expect(marker).to_have_attribute("title", "Flagged by 2: good example, wrong")
    expect(page.locator(f'tr[data-trace="{tid(701)}"] .flag-marker')).to_have_count(0)
    page.locator("#t-flagged").select_option("yes")
    expect(_rows(page)).to_have_count(2)
    flagged = {r.get_attribute("data-trace") for r in _rows(page).all()}
    assert flagged == {tid(700), tid(702)}
    expect(page.locator("#save-filtered")).to_have_text("Save the filtered traces (2)")
    page.get_by_label("Dataset", exact=True).fill("flagged-traces")
    page.locator("#save-filtered").click()
    expect(page.locator("#tr-save-outcome")).to_contain_text("Saved 2 traces as flagged-traces@1.")
    shoot(page, "dashboard-traces-flagged-en")
    with as_user(server, keys["member"]) as http:
        rows = data(http.get("/api/v2/serve/datasets/flagged-traces@1/rows"))["items"]
    assert sorted(r["metadata"]["trace_id"] for r in rows) == sorted(flagged)
    page.locator("#t-flagged").select_option("good_example")
    expect(_rows(page)).to_have_count(1)
    page.locator("#t-flagged").select_option("no")
    expect(_rows(page)).to_have_count(COUNT - 2)
    page.reload()  # the filter lives in the URL
    expect(_rows(page)).to_have_count(COUNT - 2)
    page.get_by_label("Language").select_option("zh")
    expect(page.locator('label[for="t-flagged"]')).to_have_text("标记")  # drawn again
    expect(page.locator("#traces-body caption")).to_have_text(f"共 {COUNT - 2} 条链路")
    page.locator("#t-flagged").select_option("yes")
    expect(_rows(page)).to_have_count(2)
    shoot(page, "dashboard-traces-flagged-zh")
    page.get_by_label("语言").select_option("en")
    assert errors == []


def test_a_viewer_reads_flags_and_an_admin_removes_anyones(
    page: Page, served: Served, shoot: Shoot
) -> None:
    server, keys = served
    with as_user(server, keys["reviewer"]) as http:
        data(http.put(f"/api/v2/serve/traces/{tid(704)}/flag", json={"label": "other"}))
    errors = page_errors(page)
    sign_in(page, server, keys["viewer"])
    page.goto(f"{server.url}/#/traces/{tid(704)}")
    panel = page.locator("#trace-flags")
    expect(panel.locator('li[data-user="reviewer"]')).to_contain_text("other")
    expect(panel.locator("form")).to_have_count(0)
    expect(panel.locator("button.unflag")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("null")  # nothing left out shows as text
    _switch(page, server, keys["admin"])
    page.goto(f"{server.url}/#/traces/{tid(704)}")
    remove = panel.locator('li[data-user="reviewer"] button.unflag')
    expect(remove).to_have_text("Remove reviewer's flag")
    remove.click()
    expect(page.locator("#flag-outcome")).to_have_text("Removed the flag of reviewer.")
    shoot(page, "dashboard-trace-unflagged-en")
    with as_user(server, keys["viewer"]) as http:
        detail = data(http.get(f"/api/v2/serve/traces/{tid(704)}"))
    assert detail["flags"] == []
    assert errors == []
