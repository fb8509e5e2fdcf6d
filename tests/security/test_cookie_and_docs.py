"""The dashboard's cookie and the API docs against a real ``ragmeter serve`` with keys.

The session cookie is ``__Host-`` prefixed (Secure, Path=/, no Domain): no other host, sibling
domain or plain-http page can set or overwrite it, and a cookie of the same session under
another name opens nothing. (Browsers keep Secure cookies on http://127.0.0.1 and localhost;
over plain http on a network name the server falls back to a plain cookie.) ``/docs`` runs no
third-party script: Swagger UI's files come from this server, under a Content-Security-Policy
that allows this origin's scripts and the page's own start-up script only; Chromium renders it
without loading anything from elsewhere and without a policy violation."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, FLAGS, SCREENSHOTS
from tests.integration.service import KEY, ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores

HOST_COOKIE = "__Host-ragmeter_session"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path_factory.mktemp("cookie-docs")) as started:
        yield started


def _attributes(set_cookie: str) -> tuple[str, str, list[str]]:
    pair, *rest = (part.strip() for part in set_cookie.split(";"))
    name, _, value = pair.partition("=")
    return name, value, [p.lower() for p in rest]


def _sign_in(server: ServiceProcess, host: str | None = None) -> httpx.Response:
    headers = {"Host": host} if host else {}
    return httpx.post(f"{server.url}/ui/session", json={"key": KEY}, headers=headers)


def test_the_session_cookie_is_host_prefixed_and_secure(server: ServiceProcess) -> None:
    name, value, parts = _attributes(_sign_in(server).headers["set-cookie"])
    assert name == HOST_COOKIE and len(value) >= 32
    assert {"secure", "httponly", "samesite=strict", "path=/"} <= set(parts)
    assert not any(p.startswith("domain=") for p in parts)
    runs = f"{server.base}/evaluate/runs"
    assert data(httpx.get(runs, headers={"Cookie": f"{HOST_COOKIE}={value}"}))["total"] >= 0
    # the same session id under the old or any other name is no session
    for other in ("ragmeter_session", "__Secure-ragmeter_session", "__host-ragmeter_session"):
        failure(httpx.get(runs, headers={"Cookie": f"{other}={value}"}), 401)


def test_plain_http_on_a_network_name_gets_a_cookie_browsers_keep(
    server: ServiceProcess,
) -> None:
    """A browser drops a Secure cookie set over plain http beyond loopback: there the cookie
    is the plain one, and only there is it accepted."""
    host = f"dashboard.example:{server.port}"
    name, value, parts = _attributes(_sign_in(server, host).headers["set-cookie"])
    assert name == "ragmeter_session" and "secure" not in parts and "httponly" in parts
    runs = f"{server.base}/evaluate/runs"
    plain = {"Cookie": f"ragmeter_session={value}"}
    assert data(httpx.get(runs, headers={**plain, "Host": host}))["total"] >= 0
    failure(httpx.get(runs, headers=plain), 401)  # on loopback only the __Host- one counts


def test_docs_are_served_from_this_server_under_a_policy(server: ServiceProcess) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    page = httpx.get(f"{server.url}/docs", headers=auth)
    assert page.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(s.startswith("/docs/assets/") for s in sources), sources
    assert "cdn" not in page.text.lower() and "https://" not in page.text
    policy = page.headers["content-security-policy"]
    script_src = next(p for p in policy.split(";") if p.strip().startswith("script-src"))
    assert script_src.split()[1:2] == ["'self'"] and "'sha256-" in script_src
    assert "http" not in policy and "*" not in policy and "'unsafe-eval'" not in policy
    assert "frame-ancestors 'none'" in policy
    for source in sources:
        assert httpx.get(f"{server.url}{source}", headers=auth).status_code == 200, source
    assert httpx.get(f"{server.url}/redoc", headers=auth).status_code == 404
    assert httpx.get(f"{server.url}/docs").status_code == 401  # behind the key, as before


def test_chromium_keeps_the_cookie_and_renders_the_docs_from_this_origin(
    server: ServiceProcess,
) -> None:
    """Signed in through the key form over http://127.0.0.1, Chromium keeps the __Host-
    cookie and sends it for /docs, whose page loads from this server alone."""
    requested: list[str] = []
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            page = browser.new_context().new_page()
            page.goto(f"{server.url}/")
            page.get_by_label("API key").fill(KEY)
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("button", name="Sign out").wait_for(timeout=30_000)
            cookies = {c["name"]: c for c in page.context.cookies()}
            assert cookies[HOST_COOKIE]["secure"] and cookies[HOST_COOKIE]["httpOnly"]
            page.on("request", lambda r: requested.append(r.url))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.goto(f"{server.url}/docs")
            page.get_by_text("/api/v2/serve/evaluate/runs").first.wait_for(timeout=30_000)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)  # to be looked at, like the dashboard's
            page.screenshot(path=str(SCREENSHOTS / "api-docs.png"))
        finally:
            browser.close()
    assert requested and all(u.startswith(server.url) for u in requested), requested
    assert not problems, problems
