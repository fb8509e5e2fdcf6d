"""A slow webhook receiver (a real listener on 127.0.0.1 that sleeps before it answers) delays
only its own rule's post: the other rules are evaluated and their webhooks posted meanwhile,
and the slow post, retried a bounded number of times, is recorded on its episode."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from ragmeter.runs.monitor.evaluate import evaluate_alerts
from ragmeter.runs.monitor.store import AlertStore
from ragmeter.runs.monitor.webhook import WebhookSender, webhook_policy
from ragmeter.store.db import Store
from tests.integration.score_reader import NOW, Scores

pytestmark = pytest.mark.both_stores

#: how long the slow path sleeps before it answers, seconds (past the sender's timeout)
SLOW = 3.0


class _Handler(BaseHTTPRequestHandler):
    server: _Sleepy

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.arrived.append((self.path, time.monotonic()))
        if self.path.startswith("/slow"):
            time.sleep(SLOW)
        try:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the sender gave up waiting


class _Sleepy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.arrived: list[tuple[str, float]] = []

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


@pytest.fixture
def sleepy() -> Iterator[_Sleepy]:
    server = _Sleepy()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    found = Store(store_url)
    yield found
    found.close()


def test_a_slow_webhook_delays_only_its_own_post(store: Store, sleepy: _Sleepy) -> None:
    alerts = AlertStore(store)
    alerts.add("a-slow", "m.mean < 0.5 over 1h with n >= 5", sleepy.url("/slow"))
    for index in range(3):
        alerts.add(f"b-fast-{index}", "m.mean < 0.5 over 1h with n >= 5", sleepy.url(f"/f{index}"))
    scores = Scores(store)
    scores.hour(NOW, np.full(20, 0.2))
    sender = WebhookSender(webhook_policy(["127.0.0.1/32"]), timeout=1.0, attempts=2)

    started = time.monotonic()
    done = asyncio.run(evaluate_alerts(alerts, scores, sender, now_ns=NOW))
    took = time.monotonic() - started

    assert sorted(o.rule for o in done) == ["a-slow", "b-fast-0", "b-fast-1", "b-fast-2"]
    fast = [at - started for path, at in sleepy.arrived if path.startswith("/f")]
    assert len(fast) == 3 and max(fast) < 0.9  # before the slow post's first try timed out
    slow = [at for path, at in sleepy.arrived if path == "/slow"]
    assert len(slow) == 2 and took >= 2.0  # two tries of 1 s each, then it gave up
    outcome = {o.rule: o.delivery for o in done}
    assert "gave no answer within 1 s (after 2 attempts)" in outcome["a-slow"]
    assert all(outcome[f"b-fast-{i}"] == "sent: HTTP 200" for i in range(3))
    (event,) = alerts.events(rule="a-slow")
    assert event.fired_delivery == outcome["a-slow"] and outcome["a-slow"].startswith("failed:")
