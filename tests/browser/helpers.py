"""Small helpers the browser tests share: the API's answer to a GET, the page's errors, and
signing in with a key."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.integration.service import ServiceProcess, data


def api(server: ServiceProcess, path: str, **params: Any) -> Any:
    """The data of ``GET path`` on ``server`` (keyless), as the dashboard would read it."""
    with server.client(None) as http:
        return data(http.get(path, params=params))


def page_errors(page: Page) -> list[str]:
    """A list that collects every uncaught error of ``page`` from now on."""
    found: list[str] = []
    page.on("pageerror", lambda error: found.append(str(error)))
    return found


def sign_in(page: Page, server: ServiceProcess, key: str) -> None:
    """Open the dashboard of ``server`` and sign in with ``key`` through its key form."""
    page.goto(f"{server.url}/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
