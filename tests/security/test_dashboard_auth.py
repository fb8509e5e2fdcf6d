"""The dashboard's sign-in against a real ``ragmeter serve`` with keys: the page and its files
hold no data and need no key; the key form trades a key for an HttpOnly SameSite=Strict cookie
holding a random session id (never the key); the cookie authorises reads, but a change it
authorises also needs the session's CSRF header; a wrong key opens nothing; logout ends it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.integration.service import KEY, ServiceProcess, browser, data, failure

pytestmark = pytest.mark.both_stores

ROWS = b'{"query": "q1", "retrieved_ids": ["a"], "reference_ids": ["a"]}\n'
COOKIE = "__Host-ragmeter_session"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path_factory.mktemp("dashboard-auth")) as started:
        yield started


@contextmanager
def _signed_in(server: ServiceProcess) -> Iterator[tuple[httpx.Client, str]]:
    """A client holding a session cookie (as a browser would), and its CSRF token."""
    with browser(server.url) as http:
        token = data(http.post("/ui/session", json={"key": KEY}))["csrf_token"]
        assert token and len(token) >= 32
        yield http, token


def test_the_api_refuses_requests_without_a_key(server: ServiceProcess) -> None:
    for path in ("/evaluate/runs", "/datasets", "/models"):
        assert "missing or wrong API key" in failure(httpx.get(f"{server.base}{path}"), 401)
    failure(httpx.post(f"{server.base}/evaluate/runs/x/cancel"), 401)
    # made-up cookies are no session
    forged = {"Cookie": f"{COOKIE}=" + "A" * 43}
    failure(httpx.get(f"{server.base}/evaluate/runs", headers=forged), 401)


def test_the_page_and_the_key_form_need_no_key_and_hold_no_data(server: ServiceProcess) -> None:
    page = httpx.get(f"{server.url}/")
    assert page.status_code == 200 and '<script type="module"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert httpx.get(f"{server.url}/ui/assets/app.js").status_code == 200
    state = data(httpx.get(f"{server.url}/ui/session"))
    assert state == {
        "auth_required": True,
        "signed_in": False,
        "csrf_header": "X-CSRF-Token",
        "csrf_token": None,
        "user": None,
        "role": None,
    }


def test_the_key_form_sets_an_httponly_strict_cookie_that_is_not_the_key(
    server: ServiceProcess,
) -> None:
    answer = httpx.post(f"{server.url}/ui/session", json={"key": KEY})
    data(answer)
    cookie = answer.headers["set-cookie"]
    parts = [p.strip().lower() for p in cookie.split(";")]
    assert "httponly" in parts and "samesite=strict" in parts and "path=/" in parts
    assert "secure" in parts and cookie.startswith(f"{COOKIE}=")  # loopback: a secure context
    assert any(p.startswith("max-age=") for p in parts)  # sessions expire ([server] session_hours)
    session_id = cookie.split(";", 1)[0].split("=", 1)[1]
    assert KEY not in cookie and len(session_id) >= 32
    assert KEY not in answer.text


def test_the_cookie_authorises_reads_and_csrf_guards_changes(server: ServiceProcess) -> None:
    with _signed_in(server) as (http, token):
        assert data(http.get("/api/v2/serve/evaluate/runs"))["total"] >= 0
        state = data(http.get("/ui/session"))
        assert state["signed_in"] is True and state["csrf_token"] == token
        upload = {"file": ("rows.jsonl", ROWS, "application/x-ndjson")}
        message = failure(http.post("/api/v2/serve/datasets", files=upload), 403)
        assert "X-CSRF-Token" in message
        wrong = {"X-CSRF-Token": token[:-2] + "xx"}
        failure(http.post("/api/v2/serve/datasets", files=upload, headers=wrong), 403)
        failure(http.post("/api/v2/serve/evaluate/runs/nope/cancel"), 403)
        assert data(http.get("/api/v2/serve/datasets"))["total"] == 0  # nothing landed
        right = {"X-CSRF-Token": token}
        data(http.post("/api/v2/serve/datasets", files=upload, headers=right), 201)
        # another session's token does not fit this one
        with _signed_in(server) as (_other, other_token):
            crossed = {"X-CSRF-Token": other_token}
            failure(http.post("/api/v2/serve/evaluate/runs/x/cancel", headers=crossed), 403)


def test_a_wrong_key_is_refused_and_opens_no_session(server: ServiceProcess) -> None:
    for key in ("wrong", KEY + "x", KEY[:-1]):
        answer = httpx.post(f"{server.url}/ui/session", json={"key": key})
        assert "wrong API key" in failure(answer, 401)
        assert "set-cookie" not in answer.headers
    failure(httpx.post(f"{server.url}/ui/session", json={"key": ""}), 422)


def test_logout_ends_the_session(server: ServiceProcess) -> None:
    with _signed_in(server) as (http, token):
        session_id = http.cookies[COOKIE]
        failure(http.post("/ui/logout"), 403)  # a change: CSRF header needed
        data(http.post("/ui/logout", headers={"X-CSRF-Token": token}))
        assert COOKIE not in http.cookies
    replay = {"Cookie": f"{COOKIE}={session_id}"}
    failure(httpx.get(f"{server.base}/evaluate/runs", headers=replay), 401)
    assert data(httpx.get(f"{server.url}/ui/session", headers=replay))["signed_in"] is False


def test_the_bearer_key_still_works_without_csrf(server: ServiceProcess) -> None:
    """Programs send the key itself: no cookie, so no CSRF token is asked of them."""
    with server.client() as http:
        data(http.get("/evaluate/runs"))
        failure(http.post("/evaluate/runs/nope/cancel"), 404)


def test_a_session_expires_after_session_hours(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.mktemp("dashboard-expiry")
    (home / "ragmeter.toml").write_text("[server]\nsession_hours = 0.0005\n", encoding="utf-8")
    with ServiceProcess(home) as server, _signed_in(server) as (http, _token):
        data(http.get("/api/v2/serve/evaluate/runs"))
        time.sleep(2.5)  # 0.0005 hours is 1.8 s
        failure(http.get("/api/v2/serve/evaluate/runs"), 401)
        assert data(http.get("/ui/session"))["signed_in"] is False


def test_guessing_keys_is_throttled_per_address(tmp_path_factory: pytest.TempPathFactory) -> None:
    """An attacker trying keys (as a Bearer header or through the key form) gets 429 past
    [server] max_auth_failures a minute, even with the right key, until the minute has
    passed; requests presenting no key (or only a stale session cookie, as a browser whose
    session ended does) guess nothing and are not counted."""
    home = tmp_path_factory.mktemp("guesses")
    (home / "ragmeter.toml").write_text("[server]\nmax_auth_failures = 4\n", encoding="utf-8")
    with ServiceProcess(home) as server:
        runs = f"{server.base}/evaluate/runs"
        for _ in range(10):  # no credentials: plain 401s, never throttled
            failure(httpx.get(runs), 401)
        assert data(httpx.get(runs, headers={"Authorization": f"Bearer {KEY}"}))
        for guess in ("a", "b"):
            failure(httpx.get(runs, headers={"Authorization": f"Bearer {guess}"}), 401)
        for _ in range(10):
            failure(httpx.get(runs, headers={"Cookie": f"{COOKIE}=" + "B" * 43}), 401)
        failure(httpx.post(f"{server.url}/ui/session", json={"key": "c"}), 401)
        failure(httpx.post(f"{server.url}/ui/session", json={"key": "e"}), 401)
        for attempt in (
            httpx.get(runs, headers={"Authorization": f"Bearer {KEY}"}),  # the right one too
            httpx.post(f"{server.url}/ui/session", json={"key": KEY}),
        ):
            message = failure(attempt, 429)
            assert "[server] max_auth_failures" in message, message
            assert 1 <= int(attempt.headers["retry-after"]) <= 60
        failure(httpx.get(runs), 401)  # no key presented: still the plain answer
