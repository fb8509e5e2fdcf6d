"""Alert webhooks cannot reach loopback, private or link-local hosts (the server itself, a
cloud metadata address) unless ``[online] allow_webhook_hosts`` lists them: refused when a
rule is made and again when a webhook is sent, checked on the address actually connected (a
name that rebinds to loopback gets nowhere), and a redirect is never followed. Alert rules
are an admin's to make; anyone with a key reads them, never a webhook's path or query."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.client import Client, ClientNotFoundError
from ragmeter.runs.monitor.webhook import SETTING, WebhookSender, webhook_policy
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, failure
from tests.security.listener import BODY_SECRET, Listener

pytestmark = pytest.mark.both_stores

V2 = "/api/v2/serve"
RULE = "faithfulness.mean < 0.8 over 1h with n >= 50"


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    with Listener() as found:
        yield found


def _send(sender: WebhookSender, url: str) -> str:
    return asyncio.run(sender.send(url, {"status": "firing", "rule": "r"}))


def _internal(listener: Listener) -> list[str]:
    port = listener.port
    return [
        listener.url("/ask?internal"),
        f"http://localhost:{port}/ask?internal",
        f"http://[::1]:{port}/ask?internal",
        f"http://2130706433:{port}/ask?internal",  # 127.0.0.1 written as one number
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://10.1.2.3/hook",
        "http://192.168.0.1/hook",
        "http://[fd00::1]/hook",
    ]


def test_internal_destinations_are_refused_when_sent(listener: Listener) -> None:
    sender = WebhookSender(webhook_policy([]), timeout=2.0, attempts=1)
    for url in _internal(listener):
        outcome = _send(sender, url)
        assert outcome.startswith("refused:") and SETTING in outcome, (url, outcome)
    assert not [s for s in listener.seen if "internal" in s.path]


def test_a_name_that_rebinds_to_loopback_is_refused_at_connection(listener: Listener) -> None:
    """The check before sending saw a public address; when the sender connects, the same
    name resolves to loopback (DNS rebinding): the connection goes only to an address
    checked at that moment, so nothing reaches the listener."""
    answers = iter([["93.184.216.34"], ["127.0.0.1"], ["127.0.0.1"], ["127.0.0.1"]])
    policy = webhook_policy([], resolver=lambda _host: next(answers))
    sender = WebhookSender(policy, timeout=2.0, attempts=3)
    url = f"http://rebind.example:{listener.port}/ask?rebind"
    outcome = _send(sender, url)
    assert outcome.startswith("refused:") and "rebind.example" in outcome, outcome
    assert not [s for s in listener.seen if "rebind" in s.path]


def test_a_redirect_to_a_disallowed_host_is_not_followed(listener: Listener) -> None:
    """Allowed by name (resolving to the listener), the hook answers 302 to a loopback
    address that is not allowed: the sender reports the redirect and goes nowhere else."""
    policy = webhook_policy(["hooks.internal"], resolver=lambda _host: ["127.0.0.1"])
    sender = WebhookSender(policy, timeout=2.0, attempts=1)
    target = listener.url("/ask?followed")
    outcome = _send(sender, f"http://hooks.internal:{listener.port}/redirect?to={target}")
    assert outcome == "failed: HTTP 302, a redirect, which webhooks do not follow"
    assert [s.path for s in listener.seen if "redirect" in s.path]  # the hook was posted to
    assert not [s for s in listener.seen if s.path.startswith("/ask?followed")]


def test_an_allowed_host_gets_the_payload_and_a_huge_reply_is_not_read(
    listener: Listener,
) -> None:
    sender = WebhookSender(webhook_policy(["127.0.0.1/32"]), timeout=10.0, attempts=1)
    path = f"/ask?allowed={uuid.uuid4().hex}"
    assert _send(sender, listener.url(path)) == "sent: HTTP 200"
    (posted,) = [s for s in listener.seen if s.path == path]
    assert json.loads(posted.body) == {"status": "firing", "rule": "r"}
    assert posted.headers["Content-Type"] == "application/json"
    assert _send(sender, listener.url("/huge?mb=50")) == "sent: HTTP 200"


# -- through the service ------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    home: Path = tmp_path_factory.mktemp("webhooks")
    server, keys = users_server(home)
    yield server, keys
    server.stop()


def test_internal_webhooks_are_refused_when_a_rule_is_made(
    served: tuple[ServiceProcess, dict[str, str]], listener: Listener
) -> None:
    server, keys = served
    with as_user(server, keys["admin"]) as admin:
        for index, url in enumerate(_internal(listener)):
            body = {"name": f"in{index}", "expression": RULE, "webhook_url": url}
            message = failure(admin.post(f"{V2}/online/alerts", json=body), 400)
            assert "webhook_url" in message and SETTING in message, (url, message)
        assert data(admin.get(f"{V2}/online/alerts")) == []


def test_only_admins_make_rules_and_readers_never_see_a_webhook_secret(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    body = {
        "name": "quality",
        "expression": RULE,
        "webhook_url": "https://hooks.example.com/services/T000/B000/SECRETPART?token=t0k",
    }
    with as_user(server, keys["member"]) as member:
        message = failure(member.post(f"{V2}/online/alerts", json=body), 403)
        assert "manage_alerts" in message
    with as_user(server, keys["admin"]) as admin:
        made = data(admin.post(f"{V2}/online/alerts", json=body), 201)
        assert made["webhook"] == "https://hooks.example.com/…"
        assert made["rule"] == RULE and made["firing"] is False
    with as_user(server, keys["viewer"]) as viewer:
        shown = json.dumps(data(viewer.get(f"{V2}/online/alerts")))
        assert "quality" in shown and "SECRETPART" not in shown and "t0k" not in shown
        assert data(viewer.get(f"{V2}/online/alert-events")) == []
        failure(viewer.delete(f"{V2}/online/alerts/quality"), 403)
    with as_user(server, keys["admin"]) as admin:
        assert (
            data(admin.patch(f"{V2}/online/alerts/quality", json={"enabled": False}))["enabled"]
            is False
        )
        assert data(admin.delete(f"{V2}/online/alerts/quality"))["name"] == "quality"
        failure(admin.get(f"{V2}/online/alerts/quality"), 404)


def test_a_bad_rule_is_refused_naming_the_field(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["admin"]) as admin:
        bad = {"name": "bad", "expression": "faithfulness.mean < 0.8 over 1 week"}
        message = failure(admin.post(f"{V2}/online/alerts", json=bad), 400)
        assert message.startswith("expression: alert rule") and "not understood" in message
        made = {"name": "twice", "expression": RULE}
        data(admin.post(f"{V2}/online/alerts", json=made), 201)
        assert "already exists" in failure(admin.post(f"{V2}/online/alerts", json=made), 409)


def test_the_monitor_route_checks_its_ask_and_says_when_nothing_is_scored(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["viewer"]) as viewer:
        monitor = f"{V2}/online/monitor"
        bad = failure(viewer.get(monitor, params={"metric": "m", "baseline": "x"}), 400)
        assert "choose 'window' or 'run:RUN_ID'" in bad
        failure(viewer.get(monitor), 422)  # no metric
        # an alpha so small its interval level rounds to 1 (and asks millions of draws)
        failure(viewer.get(monitor, params={"metric": "m", "alpha": "1e-300"}), 422)
        too_many = {"metric": [f"m{i}" for i in range(21)]}
        failure(viewer.get(monitor, params=too_many), 422)
        none = data(viewer.get(monitor, params={"metric": "faithfulness"}))["metrics"][0]
        assert none["buckets"] == [] and none["drift"] is None
        assert "no scored value of faithfulness" in none["note"]


def test_a_failing_receiver_gets_the_retry_policy_tries_and_no_more(listener: Listener) -> None:
    sender = WebhookSender(webhook_policy(["127.0.0.1/32"]), timeout=5.0, attempts=2)
    path = f"/error?{uuid.uuid4().hex}"
    outcome = _send(sender, listener.url(path))
    assert outcome.startswith("failed: ") and "HTTP 500 (after 2 attempts)" in outcome
    assert BODY_SECRET not in outcome  # the reply is never shown
    assert len([s for s in listener.seen if s.path == path]) == 2


def test_the_python_client_manages_rules(served: tuple[ServiceProcess, dict[str, str]]) -> None:
    server, keys = served
    with Client(server.api, keys["admin"]) as client:
        made = client.monitor.add_alert("by-client", RULE, webhook_url="https://example.com/h")
        assert made.rule == RULE and made.webhook == "https://example.com/…"
        assert "by-client" in [r.name for r in client.monitor.alerts()]
        assert client.monitor.enable_alert("by-client", False).enabled is False
        assert client.monitor.events(rule="by-client") == []
        nothing = client.monitor.series(["faithfulness"]).metrics[0]
        assert nothing.buckets == [] and nothing.drift is None
        assert client.monitor.delete_alert("by-client").name == "by-client"
        with pytest.raises(ClientNotFoundError):
            client.monitor.alert("by-client")
