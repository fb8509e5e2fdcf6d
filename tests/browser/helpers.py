"""Small helpers the browser tests share: the API's answer to a GET, and the page's errors."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

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
