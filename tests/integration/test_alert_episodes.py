"""Alert episodes against a real store and a real webhook receiver on 127.0.0.1: a quality
drop fires once, recovery resolves, a second drop fires again; replicas evaluating the same
rules at once post each webhook once. Scores are kept in the trace store and read back by
its reader, as the server's loop reads them."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from ragmeter.runs.monitor.evaluate import evaluate_alerts
from ragmeter.runs.monitor.store import AlertStore
from ragmeter.runs.monitor.webhook import WebhookSender, webhook_policy
from ragmeter.store.db import Store
from tests.integration.score_reader import HOUR_NS, NOW, Scores
from tests.security.listener import Listener

pytestmark = pytest.mark.both_stores


@pytest.fixture
def listener() -> Iterator[Listener]:
    with Listener() as found:
        yield found


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    found = Store(store_url)
    yield found
    found.close()


def _sender() -> WebhookSender:
    return WebhookSender(webhook_policy(["127.0.0.1/32"]), timeout=5.0, attempts=2)


def _posts(listener: Listener, path: str) -> list[dict[str, object]]:
    return [json.loads(s.body) for s in listener.seen if s.path == path]


def test_a_drop_fires_once_recovery_resolves_and_a_second_drop_fires_again(
    store: Store, listener: Listener
) -> None:
    alerts = AlertStore(store)
    hook = "/ask?episode-test"
    alerts.add("quality", "faithfulness.mean < 0.8 over 1h with n >= 50", listener.url(hook))
    scores, rng = Scores(store), np.random.default_rng(1)
    sender = _sender()

    def evaluate(hours: int) -> list[str]:
        done = asyncio.run(evaluate_alerts(alerts, scores, sender, now_ns=NOW + hours * HOUR_NS))
        return [o.step for o in done]

    scores.hour(NOW, rng.uniform(0.8, 1.0, 200))  # good
    assert evaluate(0) == [] and _posts(listener, hook) == []
    assert scores.asked[-1] == ("faithfulness", NOW - HOUR_NS, NOW)
    scores.hour(NOW + HOUR_NS, rng.uniform(0.4, 0.8, 200))  # the drop
    assert evaluate(1) == ["fire"]
    assert evaluate(1) == []  # still true: no second webhook
    (fired,) = _posts(listener, hook)
    assert fired["status"] == "firing" and fired["rule"] == "quality"
    assert fired["metric"] == "faithfulness" and fired["n"] == 200
    assert 0.55 < float(fired["value"]) < 0.65  # type: ignore[arg-type]
    scores.hour(NOW + 2 * HOUR_NS, rng.uniform(0.4, 0.8, 20))  # too few to decide
    assert evaluate(2) == [] and len(_posts(listener, hook)) == 1
    scores.hour(NOW + 3 * HOUR_NS, rng.uniform(0.8, 1.0, 100))  # recovered
    assert evaluate(3) == ["resolve"] and evaluate(3) == []
    assert [p["status"] for p in _posts(listener, hook)] == ["firing", "resolved"]
    scores.hour(NOW + 4 * HOUR_NS, rng.uniform(0.3, 0.7, 100))  # the second drop
    assert evaluate(4) == ["fire"]
    assert [p["status"] for p in _posts(listener, hook)] == ["firing", "resolved", "firing"]
    second, first = alerts.events(rule="quality")
    assert first.resolved_at is not None and second.resolved_at is None
    assert first.fired_delivery == "sent: HTTP 200" == first.resolved_delivery
    assert first.n == 200 and first.resolved_n == 100 and second.id == fired["episode"] + 1  # type: ignore[operator]


def test_a_disabled_or_unparsable_rule_is_not_evaluated(store: Store, listener: Listener) -> None:
    alerts = AlertStore(store)
    alerts.add("off", "m.mean < 2 over 1h with n >= 1", listener.url("/ask?off"))
    alerts.set_enabled("off", False)
    alerts.add("broken", "m.mean < 2 over 1 hour", listener.url("/ask?broken"))  # stored as is
    scores = Scores(store)
    scores.hour(NOW, np.full(10, 0.5))
    assert asyncio.run(evaluate_alerts(alerts, scores, _sender(), now_ns=NOW)) == []
    assert not [s for s in listener.seen if s.path in ("/ask?off", "/ask?broken")]


def test_replicas_evaluating_at_once_post_each_episode_once(
    store_url: str, listener: Listener
) -> None:
    """Four replicas (each its own engine on the store) evaluate 12 rules at the same moment,
    twice over: each rule's episode is opened, and its webhook posted, exactly once."""
    replicas = [Store(store_url) for _ in range(4)]
    try:
        for index in range(12):
            url = listener.url(f"/ask?race={index}")
            AlertStore(replicas[0]).add(f"r{index}", "m.mean < 0.5 over 1h with n >= 5", url)
        scores = Scores(replicas[0])
        scores.hour(NOW, np.full(40, 0.2))
        start = threading.Barrier(len(replicas))
        done: list[int] = []

        def replica(store: Store) -> None:
            alerts, sender = AlertStore(store), _sender()
            for _ in range(2):
                start.wait()
                found = asyncio.run(evaluate_alerts(alerts, scores, sender, now_ns=NOW))
                done.extend(o.event_id for o in found)

        threads = [threading.Thread(target=replica, args=(s,)) for s in replicas]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(done) == 12 and len(set(done)) == 12
        for index in range(12):
            assert len(_posts(listener, f"/ask?race={index}")) == 1, index
        assert len(AlertStore(replicas[0]).events(limit=1000)) == 12
    finally:
        for store in replicas:
            store.close()


def test_a_rule_that_fails_to_evaluate_does_not_stop_the_others(
    store: Store, listener: Listener
) -> None:
    alerts = AlertStore(store)
    alerts.add("a-broken", "unreadable.mean < 0.5 over 1h with n >= 1", listener.url("/ask?x"))
    alerts.add("b-working", "m.mean < 0.5 over 1h with n >= 1", listener.url("/ask?working"))
    scores = Scores(store)
    scores.hour(NOW, np.full(10, 0.2))

    def reader(metric: str, since: int, until: int) -> tuple[np.ndarray, np.ndarray]:
        if metric == "unreadable":
            raise RuntimeError("the trace store is away")
        return scores(metric, since, until)

    done = asyncio.run(evaluate_alerts(alerts, reader, _sender(), now_ns=NOW))
    assert [(o.rule, o.step) for o in done] == [("b-working", "fire")]
    assert len(_posts(listener, "/ask?working")) == 1
