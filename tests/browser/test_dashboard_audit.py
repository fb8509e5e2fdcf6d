"""The dashboard's Audit view in Chromium: an admin signed in with their key sees the Audit
link and the changes members made (who, what, ids); a viewer sees no link, and the log's
address shows the server's refusal instead of entries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import page_errors
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]


def _sign_in(page: Page, server: ServiceProcess, key: str) -> None:
    page.goto(f"{server.url}/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def test_an_admin_reads_the_audit_log_and_a_viewer_cannot(
    page: Page, tmp_path: Path, shoot: Shoot
) -> None:
    errors = page_errors(page)
    server, keys = users_server(tmp_path / "audit")
    try:
        with as_user(server, keys["member"]) as member:
            data(member.post("/api/v2/serve/knowledge/spaces", json={"name": "notes"}), 201)
        _sign_in(page, server, keys["admin"])
        link = page.get_by_role("link", name="Audit")
        expect(link).to_be_visible()
        link.click()
        expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
        row = page.get_by_role("row").filter(has_text="POST /api/v2/serve/knowledge/spaces")
        expect(row).to_contain_text("member")
        expect(row).to_contain_text("name=notes")
        shoot(page, "dashboard-audit")
        page.get_by_role("button", name="Sign out").click()
        # signed out before the next sign-in: a sign-out answered after it would clear its cookie
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        _sign_in(page, server, keys["viewer"])
        expect(page.get_by_role("link", name="Audit")).to_be_hidden()
        page.goto(f"{server.url}/#/audit")
        expect(page.get_by_role("alert")).to_contain_text("role 'viewer'")
    finally:
        server.stop()
    assert errors == []
