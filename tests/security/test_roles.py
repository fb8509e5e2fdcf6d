"""Attacks by key holders of lower roles against a real ``ragmeter serve``: a member deletes,
renames, cancels or resumes another member's run, or deletes their space or dataset; a
viewer sends changes; a disabled or replaced key is tried; a member reads the audit log or
adds an admin. Each is refused (403 or 401), the owner's and an admin's changes go through,
and the audit log records who changed what."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from ragmeter.client import Client
from ragmeter.runs.storage.store import RunStore
from ragmeter.service.permissions import ROUTES, Action
from ragmeter.store.db import Store
from ragmeter.store.models import DatasetRecord, RunRecord, SpaceRecord
from tests.integration.helpers import run
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, browser, data, failure, wait_run

pytestmark = pytest.mark.both_stores

ROWS = [{"query": "q1", "retrieved_ids": ["a"], "reference_ids": ["a"]}]
V2 = "/api/v2/serve"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    store_kind: str,
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    extra = (("alice", "member"), ("bob", "member"), ("carol", "member"), ("dave", "member"))
    server, keys = users_server(tmp_path_factory.mktemp("roles-attacks"), extra)
    try:
        yield server, keys
    finally:
        server.stop()


def _run(http: httpx.Client) -> str:
    """A finished run of rows no other run has (inline rows are stored once per content)."""
    rows = [{**ROWS[0], "query": f"q-{uuid.uuid4().hex}"}]
    body = {
        "scene_key": "dataset",
        "datasets": rows,
        "evaluate_metrics": ["RetrieverHitRateMetric"],
    }
    run_id: str = data(http.post(f"{V2}/evaluate/runs", json=body), 202)["run_id"]
    http.base_url = httpx.URL(f"{http.base_url}{V2}")
    try:
        wait_run(http, run_id)
    finally:
        http.base_url = httpx.URL(str(http.base_url).removesuffix(f"{V2}/"))
    return run_id


def _refused(answer: httpx.Response, who: str) -> str:
    message = failure(answer, 403)
    assert f"user '{who}' has role 'member'" in message
    return message


def test_a_member_cannot_change_or_delete_another_members_run(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["alice"]) as alice, as_user(server, keys["bob"]) as bob:
        run_id = _run(alice)
        where = f"{V2}/evaluate/runs/{run_id}"
        message = _refused(bob.delete(where), "bob")
        assert "made by 'alice'" in message
        _refused(bob.patch(where, json={"name": "mine now"}), "bob")
        _refused(bob.post(f"{where}/cancel"), "bob")
        _refused(bob.post(f"{where}/resume"), "bob")
        _refused(
            bob.delete("/api/v1/evaluate/evaluation", params={"evaluation_code": run_id}), "bob"
        )
        assert data(bob.get(where))["run_id"] == run_id  # reading is not changing
        assert data(alice.patch(where, json={"name": "alice's"}))["name"] == "alice's"
        data(alice.delete(where))
        failure(alice.get(where), 404)


def test_an_admin_changes_anything_a_member_made(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["carol"]) as carol, as_user(server, keys["admin"]) as admin:
        run_id = _run(carol)
        data(admin.delete(f"{V2}/evaluate/runs/{run_id}"))
        data(carol.post(f"{V2}/knowledge/spaces", json={"name": "carols"}), 201)
        data(admin.delete(f"{V2}/knowledge/spaces/carols"))


def test_a_member_cannot_delete_another_members_space_or_dataset(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    upload = {"file": ("rows.jsonl", b'{"query": "q", "retrieved_ids": [], "reference_ids": []}\n')}
    with as_user(server, keys["alice"]) as alice, as_user(server, keys["bob"]) as bob:
        data(alice.post(f"{V2}/knowledge/spaces", json={"name": "alices"}), 201)
        _refused(bob.delete(f"{V2}/knowledge/spaces/alices"), "bob")
        files = {"files": ("a.md", b"# A\n\nalice's notes\n", "text/markdown")}
        _refused(bob.post(f"{V2}/knowledge/spaces/alices/documents", files=files), "bob")
        data(alice.post(f"{V2}/datasets", files=upload, data={"name": "alices-rows"}), 201)
        _refused(bob.delete(f"{V2}/datasets/alices-rows"), "bob")
        _refused(bob.delete("/api/v1/evaluate/dataset", params={"code": "alices-rows"}), "bob")
        data(alice.delete(f"{V2}/datasets/alices-rows"))
        data(alice.delete(f"{V2}/knowledge/spaces/alices"))


def _upload(http: httpx.Client, name: str, query: str) -> httpx.Response:
    line = json.dumps({"query": query, "retrieved_ids": [], "reference_ids": []})
    files = {"file": ("rows.jsonl", f"{line}\n".encode())}
    return http.post(f"{V2}/datasets", files=files, data={"name": name})


def _upload_trec(http: httpx.Client, name: str, doc: str) -> httpx.Response:
    files = {
        "qrels": ("q.qrels", b"q1 0 d1 1\n"),
        "run": ("r.run", f"q1 Q0 {doc} 1 1 r\n".encode()),
    }
    return http.post(f"{V2}/datasets/trec", files=files, data={"name": name})


def test_a_member_cannot_add_a_version_to_another_users_dataset(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with (
        as_user(server, keys["alice"]) as alice,
        as_user(server, keys["bob"]) as bob,
        as_user(server, keys["admin"]) as admin,
    ):
        made = data(_upload(alice, "alices-v", "a1"), 201)
        # bob's rows as alice's next version: her runs of "alices-v" would evaluate his rows
        message = _refused(_upload(bob, "alices-v", "b"), "bob")
        assert "dataset 'alices-v', made by 'alice'" in message
        _refused(_upload_trec(bob, "alices-v", "d1"), "bob")
        _refused(_upload(bob, "alices-v", "a1"), "bob")  # her rows again: refused alike
        assert [v["version"] for v in data(alice.get(f"{V2}/datasets/alices-v/versions"))] == [1]
        assert made["created_by"] == "alice"
        # the owner adds versions, an admin adds one to anyone's, a new name is anyone's
        assert data(_upload(alice, "alices-v", "a2"), 201)["version"] == 2
        trec = data(_upload_trec(alice, "alices-v", "d2"), 201)
        assert (trec["version"], trec["created_by"]) == (3, "alice")
        by_admin = data(_upload(admin, "alices-v", "x"), 201)
        assert (by_admin["version"], by_admin["created_by"]) == (4, "admin")
        assert data(_upload(bob, "bobs-v", "b"), 201)["version"] == 1
    # a dataset stored with no user (before users, or by the command line) is an admin's
    store = Store(server.store_url)
    try:
        RunStore(store).keep_dataset([{"query": "old"}], name="legacy-rows")
    finally:
        store.close()
    with as_user(server, keys["bob"]) as bob, as_user(server, keys["admin"]) as admin:
        assert "made by no user" in _refused(_upload(bob, "legacy-rows", "b"), "bob")
        assert data(_upload(admin, "legacy-rows", "b"), 201)["version"] == 2


def test_what_a_user_makes_records_who_made_it(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["dave"]) as dave:
        run_id = _run(dave)
        data(dave.post(f"{V2}/knowledge/spaces", json={"name": "daves"}), 201)
    store = Store(server.store_url)
    try:
        with store.session() as session:
            run_record = session.get(RunRecord, run_id)
            assert run_record is not None and run_record.created_by == "dave"
            dataset = session.get(DatasetRecord, run_record.dataset_id)
            assert dataset is not None and dataset.created_by == "dave"
            space = session.scalars(select(SpaceRecord).where(SpaceRecord.name == "daves")).one()
            assert space.created_by == "dave"
    finally:
        store.close()


def test_every_answer_names_who_made_the_object(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["carol"]) as carol, as_user(server, keys["admin"]) as admin:
        run_id = _run(carol)
        run_info = data(carol.get(f"{V2}/evaluate/runs/{run_id}"))
        assert run_info["created_by"] == "carol"
        listed = data(admin.get(f"{V2}/evaluate/runs", params={"limit": 200}))["items"]
        assert {r["run_id"]: r["created_by"] for r in listed}[run_id] == "carol"
        assert data(carol.get(f"{V2}/datasets/{run_info['dataset_id']}"))["created_by"] == "carol"
        assert (
            data(carol.post(f"{V2}/knowledge/spaces", json={"name": "carol-space"}), 201)[
                "created_by"
            ]
            == "carol"
        )
        assert data(admin.get(f"{V2}/knowledge/spaces/carol-space"))["created_by"] == "carol"
        prompt = {"code": "made-by", "template": "{query} {context} {answer}"}
        assert data(admin.post(f"{V2}/prompts", json=prompt), 201)["created_by"] == "admin"
        edited = {**prompt, "template": "Q: {query} {context} {answer}", "replace": True}
        assert data(admin.post(f"{V2}/prompts", json=edited), 201)["version"] == 2
        assert data(carol.get(f"{V2}/prompts/made-by@1"))["created_by"] == "admin"
        app = {"name": "made-by", "config": {"kind": "http", "url": "http://93.184.216.34/x"}}
        assert data(admin.post(f"{V2}/apps", json=app), 201)["created_by"] == "admin"
        assert [a["created_by"] for a in data(carol.get(f"{V2}/apps"))] == ["admin"]
        schemas = admin.get("/openapi.json").json()["components"]["schemas"]
    for model in ("RunInfo", "DatasetOut", "SpaceInfo", "PromptOut", "AppOut", "TestsetJob"):
        assert "created_by" in schemas[model]["properties"], model
    # the Python client's types carry it too
    with Client(server.api, keys["carol"]) as client:
        assert client.runs.get(run_id).created_by == "carol"
        assert client.spaces.get("carol-space").created_by == "carol"
        assert client.prompts.get("made-by").created_by == "admin"
        assert client.apps.get("made-by").created_by == "admin"
        assert client.datasets.get(run_info["dataset_id"]).created_by == "carol"


#: the requests other than GET that change nothing: reads with a body, and the key form
READS = {
    ("POST", f"{V2}/knowledge/spaces/{{space}}/retrieve"),
    ("POST", "/api/v1/knowledge/space/list"),
    ("POST", "/api/v1/app/list"),
    ("POST", "/ui/session"),
    ("POST", "/ui/logout"),
}


def test_a_viewer_and_a_reviewer_cannot_change_anything(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    changes = [key for key in ROUTES if key[0] != "GET" and key not in READS]
    assert len(changes) == 45  # every change route; a new one joins the count here
    labelling = [key for key in changes if ROUTES[key].action == Action.LABEL]
    assert len(labelling) == 6  # a reviewer's labels: one row's (put, remove), and imports;
    # a trace's flag (put, remove)
    for who in ("viewer", "reviewer"):
        with as_user(server, keys[who]) as http:
            for method, path in changes:
                if who == "reviewer" and (method, path) in labelling:
                    continue  # what a reviewer is for (tests/security/test_label_attacks.py)
                url = path.replace("{", "").replace("}", "")  # a made-up id
                message = failure(http.request(method, url, json={}), 403)
                assert f"role '{who}'" in message, (method, path)


def test_a_member_cannot_read_the_audit_log_or_manage_users(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member:
        assert "manage_users" in _refused(member.get(f"{V2}/audit"), "member")
        _refused(member.post(f"{V2}/users", json={"name": "evil", "role": "admin"}), "member")
        _refused(member.post(f"{V2}/users/admin/disable"), "member")
        _refused(member.post(f"{V2}/users/admin/rotate"), "member")
        _refused(member.post(f"{V2}/prompts", json={"code": "x", "template": "{query}"}), "member")


def _whoami(server: ServiceProcess, key: str) -> httpx.Response:
    with as_user(server, key) as http:
        return http.get(f"{V2}/whoami")


def test_a_disabled_key_and_a_replaced_key_are_refused(
    served: tuple[ServiceProcess, dict[str, str]], tmp_path: Path
) -> None:
    server, keys = served
    with as_user(server, keys["admin"]) as admin:
        made = data(admin.post(f"{V2}/users", json={"name": "erin", "role": "member"}), 201)
        old = made["key"]
        assert data(_whoami(server, old))["name"] == "erin"
        new = data(admin.post(f"{V2}/users/erin/rotate"))["key"]
        assert new != old
        failure(_whoami(server, old), 401)
        assert data(_whoami(server, new))["name"] == "erin"
        data(admin.post(f"{V2}/users/erin/disable"))
        failure(_whoami(server, new), 401)
    # the command line on the store's machine, while the server runs
    done = run("users", "rotate", "viewer", "--json", home=server.home, env=server.store_env)
    assert done.returncode == 0, done.stderr
    failure(_whoami(server, keys["viewer"]), 401)
    keys["viewer"] = json.loads(done.stdout)["key"]
    assert data(_whoami(server, keys["viewer"]))["name"] == "viewer"


def test_a_session_ends_when_its_user_is_disabled(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["admin"]) as admin:
        key = data(admin.post(f"{V2}/users", json={"name": "frank", "role": "viewer"}), 201)["key"]
        with browser(server.url) as page:
            data(page.post("/ui/session", json={"key": key}))
            assert data(page.get(f"{V2}/whoami"))["name"] == "frank"
            data(admin.post(f"{V2}/users/frank/disable"))
            failure(page.get(f"{V2}/whoami"), 401)
            failure(page.post("/ui/session", json={"key": key}), 401)


def _entries(admin: httpx.Client, user: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = data(admin.get(f"{V2}/audit", params={"user": user}))
    return entries


def test_changes_are_in_the_audit_log_with_who_what_and_ids(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member, as_user(server, keys["config"]) as admin:
        run_id = _run(member)
        data(member.patch(f"{V2}/evaluate/runs/{run_id}", json={"note": "n"}))
        data(member.delete(f"{V2}/evaluate/runs/{run_id}"))
        member.delete(f"{V2}/evaluate/runs/{run_id}")  # a 404 changes nothing: no entry
        entries = _entries(admin, "member")
        assert [(e["action"].split(" ")[0], e["object_kind"]) for e in entries[:3]] == [
            ("DELETE", "run"),
            ("PATCH", "run"),
            ("POST", "run"),
        ]
        deleted, patched, created = entries[:3]
        assert created["after"]["run_id"] == run_id and created["object_id"] is None
        assert patched["object_id"] == deleted["object_id"] == run_id
        assert deleted["before"] == {"run_id": run_id}
        assert deleted["action"] == f"DELETE {V2}/evaluate/runs/{run_id}"
        # paged: newest first, the next page older than the last id seen
        older = data(admin.get(f"{V2}/audit", params={"limit": 1, "before_id": deleted["id"]}))
        assert older[0]["id"] == patched["id"]
        # reads are not changes; a refused change is not one either
        with as_user(server, keys["viewer"]) as viewer:
            viewer.get(f"{V2}/evaluate/runs")
            viewer.delete(f"{V2}/evaluate/runs/{run_id}")
        assert _entries(admin, "viewer") == []
    # the command line's changes too, as the local admin
    assert (
        run(
            "users", "add", "gina", "--role", "viewer", home=server.home, env=server.store_env
        ).returncode
        == 0
    )
    with as_user(server, keys["config"]) as admin:
        added = _entries(admin, "local")[0]
        assert (added["action"], added["object_id"]) == ("ragmeter users add", "gina")
        assert "key" not in str(added["after"])
