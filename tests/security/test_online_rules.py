"""Online rules through a real ``ragmeter serve``: members make rules and change only their
own (an admin any), viewers and reviewers make none, ragmeter.toml's rules are read-only,
and every cap (rules, metrics and filters per rule, sample rate, budgets) is a 4xx naming
the limit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.client import Client
from ragmeter.config import OnlineRule
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores

V2 = "/api/v2/serve"
RULES = f"{V2}/online/rules"
CONFIG = """
[models.judge]
base_url = "http://127.0.0.1:9/v1"
model = "scripted"

[server]
max_metrics = 3

[online]
max_rules = 4
max_rule_filters = 2

[[online.rules]]
name = "from-file"
metrics = ["hit_rate"]
"""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    home: Path = tmp_path_factory.mktemp("online-rules")
    (home / "ragmeter.toml").write_text(CONFIG)
    server, keys = users_server(home, (("alice", "member"), ("bob", "member")))
    try:
        yield server, keys
    finally:
        server.stop()


def _rule(name: str, **changes: Any) -> dict[str, Any]:
    return {"name": name, "metrics": ["hit_rate", "faithfulness"], "judge": "judge", **changes}


def _clear(admin: httpx.Client) -> None:
    for found in data(admin.get(RULES)):
        if found["source"] == "api":
            data(admin.delete(f"{RULES}/{found['rule']['name']}"))


def test_members_make_rules_and_change_only_their_own(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["alice"]) as alice, as_user(server, keys["bob"]) as bob:
        made = data(alice.post(RULES, json=_rule("alices", sample_rate=0.1)), 201)
        assert made["created_by"] == "alice" and made["source"] == "api"
        assert (made["requests_today"], made["traces_scored"]) == (0, 0)
        listed = {r["rule"]["name"]: r for r in data(bob.get(RULES))}
        assert listed["from-file"]["source"] == "ragmeter.toml"
        assert listed["alices"]["rule"]["sample_rate"] == 0.1
        where = f"{RULES}/alices"
        for answer in (
            bob.patch(where, json={"enabled": False}),
            bob.put(where, json=_rule("alices")),
            bob.delete(where),
        ):
            assert "made by 'alice'" in failure(answer, 403)
        changed = data(alice.patch(where, json={"enabled": False, "sample_rate": 0.5}))
        assert changed["rule"]["enabled"] is False and changed["rule"]["sample_rate"] == 0.5
        replaced = data(alice.put(where, json=_rule("alices", metrics=["mrr"], judge=None)))
        assert replaced["rule"]["metrics"] == ["mrr"] and replaced["rule"]["enabled"] is True
        data(alice.delete(where))
        failure(alice.get(where), 404)
    with as_user(server, keys["bob"]) as bob, as_user(server, keys["admin"]) as admin:
        data(bob.post(RULES, json=_rule("bobs")), 201)
        data(admin.patch(f"{RULES}/bobs", json={"delay_seconds": 5}))
        data(admin.delete(f"{RULES}/bobs"))


@pytest.mark.parametrize("who", ["viewer", "reviewer"])
def test_viewers_and_reviewers_make_and_change_no_rule(
    served: tuple[ServiceProcess, dict[str, str]], who: str
) -> None:
    server, keys = served
    with as_user(server, keys[who]) as http, as_user(server, keys["admin"]) as admin:
        assert f"role '{who}'" in failure(http.post(RULES, json=_rule("mine")), 403)
        data(admin.post(RULES, json=_rule("admins")), 201)
        try:
            for method in ("PUT", "PATCH", "DELETE"):
                body = _rule("admins") if method == "PUT" else {"enabled": False}
                answer = http.request(method, f"{RULES}/admins", json=body)
                assert f"role '{who}'" in failure(answer, 403)
            assert [r["rule"]["name"] for r in data(http.get(RULES))] == ["from-file", "admins"]
        finally:
            data(admin.delete(f"{RULES}/admins"))


def test_the_rules_of_ragmeter_toml_are_read_only(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["admin"]) as admin:
        where = f"{RULES}/from-file"
        assert "ragmeter.toml" in failure(admin.post(RULES, json=_rule("from-file")), 409)
        assert "ragmeter.toml" in failure(admin.patch(where, json={"enabled": False}), 409)
        assert "ragmeter.toml" in failure(admin.delete(where), 409)
        assert data(admin.get(where))["rule"]["enabled"] is True


@pytest.mark.parametrize(
    ("body", "status", "names"),
    [
        (
            _rule("many", metrics=["hit_rate", "mrr", "ndcg@10", "faithfulness"]),
            400,
            "[server] max_metrics",
        ),
        (
            _rule("filtered", filters=[{"field": "service", "value": "a"}] * 3),
            400,
            "[online] max_rule_filters",
        ),
        (_rule("rate", sample_rate=1.5), 422, "sample_rate"),
        (_rule("rate", sample_rate=-0.5), 422, "sample_rate"),
        (_rule("budget", max_requests_per_day=-1), 422, "max_requests_per_day"),
        (_rule("budget", max_requests_per_day=10**12), 422, "max_requests_per_day"),
        (_rule("budget", max_tokens_per_day=10**15), 422, "max_tokens_per_day"),
        (_rule("late", delay_seconds=10**6), 422, "delay_seconds"),
        (_rule("bad name/x"), 422, "name"),
        (_rule("nosuch", metrics=["no_such_metric"]), 400, "no_such_metric"),
        (_rule("nojudge", judge=None), 400, "need a judge"),
        (_rule("otherjudge", judge="gpt-secret"), 400, "unknown model 'gpt-secret'"),
        (
            _rule("field", filters=[{"field": "password", "value": "x"}]),
            400,
            "unknown filter field",
        ),
        (_rule("op", filters=[{"field": "service", "op": "regex", "value": ".*"}]), 422, "op"),
    ],
)
def test_caps_and_bad_rules_are_refused_naming_the_limit(
    served: tuple[ServiceProcess, dict[str, str]], body: dict[str, Any], status: int, names: str
) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member:
        assert names in failure(member.post(RULES, json=body), status)
        assert body["name"] not in [r["rule"]["name"] for r in data(member.get(RULES))]


def test_the_number_of_rules_is_capped(served: tuple[ServiceProcess, dict[str, str]]) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member, as_user(server, keys["admin"]) as admin:
        try:
            for i in range(3):  # with the file's rule: 4, the cap
                data(member.post(RULES, json=_rule(f"r{i}")), 201)
            message = failure(member.post(RULES, json=_rule("one-more")), 400)
            assert "[online] max_rules" in message
            data(member.patch(f"{RULES}/r0", json={"enabled": False}))  # changes still go
            bad = member.patch(f"{RULES}/r0", json={"sample_rate": 7})
            assert "sample_rate" in failure(bad, 422)
        finally:
            _clear(admin)


def test_the_client_manages_rules(served: tuple[ServiceProcess, dict[str, str]]) -> None:
    server, keys = served
    client = Client(server.api, keys["member"])
    try:
        made = client.online.create_rule({"name": "via-client", "metrics": ["mrr@10"]})
        assert made.rule.judge is None and made.created_by == "member"
        paused = client.online.update_rule("via-client", enabled=False)
        assert paused.rule.enabled is False
        rule = OnlineRule(name="via-client", metrics=("hit_rate",), sample_rate=0.25)
        assert client.online.replace_rule(rule).rule.sample_rate == 0.25
        assert [r.rule.name for r in client.online.rules()] == ["from-file", "via-client"]
        assert client.online.rule("via-client").traces_scored == 0
        assert client.online.delete_rule("via-client") == {"deleted": "via-client"}
    finally:
        client.close()
