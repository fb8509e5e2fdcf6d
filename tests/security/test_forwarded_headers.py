"""Forwarded headers against a real ``ragmeter serve``: ``X-Forwarded-For`` names the client only
when the peer is one of ``[server] trusted_proxies`` (default: none). Otherwise a client on
loopback rotating the header neither escapes ``[server] max_auth_failures`` nor locks another
address out, and the access log records the real peer, never the forged one."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.integration.service import KEY, ServiceProcess, failure

WRONG = {"Authorization": "Bearer wrong-key-0000000000"}


def _forged(number: int) -> dict[str, str]:
    return {**WRONG, "X-Forwarded-For": f"203.0.113.{number}", "X-Real-IP": f"198.51.100.{number}"}


def _home(tmp_path: Path, extra: str = "") -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ragmeter.toml").write_text(
        f"[server]\nmax_auth_failures = 4\n{extra}", encoding="utf-8"
    )
    return home


def test_rotating_x_forwarded_for_does_not_reset_the_failure_count(tmp_path: Path) -> None:
    with ServiceProcess(_home(tmp_path), log_level="info") as server:
        runs = f"{server.base}/evaluate/runs"
        for number in range(4):
            failure(httpx.get(runs, headers=_forged(number)), 401)
        # a fifth forged address is still this peer: its guesses are used up
        message = failure(httpx.get(runs, headers=_forged(99)), 429)
        assert "max_auth_failures" in message
        # and the right key from that peer waits too (the count is the peer's, not the header's)
        right = {"Authorization": f"Bearer {KEY}", "X-Forwarded-For": "192.0.2.7"}
        failure(httpx.get(runs, headers=right), 429)
        server.stop()
        log = server.log.read_text(encoding="utf-8")
    assert "127.0.0.1:" in log and "/evaluate/runs" in log
    for forged in ("203.0.113.", "198.51.100.", "192.0.2.7"):
        assert forged not in log, log


def test_a_trusted_proxy_names_the_client(tmp_path: Path) -> None:
    home = _home(tmp_path, 'trusted_proxies = ["127.0.0.1"]\n')
    with ServiceProcess(home, log_level="info") as server:
        runs = f"{server.base}/evaluate/runs"
        for _ in range(4):
            failure(httpx.get(runs, headers=_forged(1)), 401)
        failure(httpx.get(runs, headers=_forged(1)), 429)
        # behind the proxy, another client is another address with its own count
        ok = {"Authorization": f"Bearer {KEY}", "X-Forwarded-For": "203.0.113.2"}
        assert httpx.get(runs, headers=ok).status_code == 200
        server.stop()
        log = server.log.read_text(encoding="utf-8")
    assert "203.0.113.1:" in log and "203.0.113.2:" in log
