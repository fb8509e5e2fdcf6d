"""Every route of the app x every role against a real server: a route whose action the role
lacks answers 403 in the envelope, naming the user, the role and the action; one it has
never answers 401 or 403 (a made-up id then answers 404 or a refused body 422). The routes
come from the app itself, so a new route without an entry in the permission table fails."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from ragmeter.client import Client, ClientAuthError
from ragmeter.config import load_settings
from ragmeter.service.app import create_app
from ragmeter.service.middleware import OPEN_PATHS
from ragmeter.service.permissions import GRANTS, ROUTES, Action, app_routes, permission_table
from ragmeter.store.users import Role
from tests.integration.helpers import run
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, browser

pytestmark = pytest.mark.both_stores

#: what a made-up path parameter is sent as (no object has it: no route changes anything)
_PARAMS = {"row_index": "0"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> FastAPI:
    home = tmp_path_factory.mktemp("roles-app")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGMETER_HOME", str(home))
        return create_app(load_settings())


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    store_kind: str,
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    server, keys = users_server(tmp_path_factory.mktemp("roles-server"))
    try:
        yield server, keys
    finally:
        server.stop()


def _routes(app: FastAPI) -> list[tuple[str, str]]:
    return sorted({(method, path) for method, path, _ in app_routes(app)})


def test_every_route_of_the_app_has_an_entry_and_every_entry_a_route(app: FastAPI) -> None:
    served = set(_routes(app))
    assert served - set(ROUTES) == set(), "routes missing from permissions.ROUTES"
    assert set(ROUTES) - served == set(), "entries of permissions.ROUTES that no route has"


def test_the_routes_open_without_a_key_are_the_open_entries() -> None:
    open_entries = {path for (_, path), rule in ROUTES.items() if rule.action is None}
    assert open_entries == {*OPEN_PATHS, "/ui/assets"}


def test_each_role_holds_its_actions() -> None:
    assert GRANTS[Role.ADMIN] == frozenset(Action)
    assert GRANTS[Role.MEMBER] == {Action.READ, Action.WRITE_OWN, Action.LABEL}
    assert GRANTS[Role.REVIEWER] == {Action.READ, Action.LABEL}
    assert GRANTS[Role.VIEWER] == {Action.READ}
    assert GRANTS[Role.INGEST] == {Action.INGEST}


def _request(http: httpx.Client, method: str, path: str) -> httpx.Response:
    url = re.sub(r"\{(\w+)\}", lambda m: _PARAMS.get(m.group(1), "no-such-thing"), path)
    if path == "/ui/assets":
        url = "/ui/assets/app.js"
    if path == "/docs/assets":
        url = "/docs/assets/swagger-ui.css"
    body: dict[str, object] | None = {} if method in ("POST", "PATCH", "PUT") else None
    return http.request(method, url, json=body)


@pytest.mark.parametrize("user", ["config", "admin", "member", "reviewer", "viewer", "ingest"])
def test_every_route_answers_each_role_as_the_table_says(
    app: FastAPI, served: tuple[ServiceProcess, dict[str, str]], user: str
) -> None:
    server, keys = served
    role = Role.ADMIN if user == "config" else Role(user)
    wrong: list[str] = []
    with as_user(server, keys[user]) as http:
        for method, path in _routes(app):
            if (method, path) == ("POST", "/ui/logout"):
                continue  # a Bearer key has no session to end; a session's is tested below
            rule = ROUTES[(method, path)]
            answer = _request(http, method, path)
            allowed = rule.action is None or rule.action in GRANTS[role]
            body = answer.json() if "json" in answer.headers.get("content-type", "") else {}
            if allowed and (answer.status_code in (401, 403) or answer.status_code >= 500):
                wrong.append(f"{method} {path}: {answer.status_code} {body}")
            if not allowed:
                expected = (
                    answer.status_code == 403
                    and body.get("err_code") == "forbidden"
                    and f"role '{role.value}'" in body.get("err_msg", "")
                    and str(rule.action.value if rule.action else "") in body["err_msg"]
                )
                if not expected:
                    wrong.append(f"{method} {path}: {answer.status_code} {body}")
    assert wrong == [], f"{user}: " + "\n".join(wrong)


def test_a_session_acts_as_the_user_whose_key_opened_it(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with browser(server.url) as page:
        state = page.post("/ui/session", json={"key": keys["viewer"]}).json()["data"]
        assert (state["user"], state["role"]) == ("viewer", "viewer")
        csrf = {"X-CSRF-Token": state["csrf_token"]}
        refused = page.post("/api/v2/serve/knowledge/spaces", json={"name": "s"}, headers=csrf)
        assert refused.status_code == 403 and "role 'viewer'" in refused.json()["err_msg"]
        assert page.get("/api/v2/serve/whoami").json()["data"]["name"] == "viewer"
        assert page.post("/ui/logout", headers=csrf).status_code == 200
        assert page.get("/api/v2/serve/whoami").status_code == 401


def test_the_permission_table_of_docs_security_is_the_enforced_one() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text("utf-8")
    assert permission_table() in page, "run python scripts/permission_table.py"


def test_the_client_manages_users_and_reads_the_audit_log(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with Client(server.api, keys["admin"]) as admin:
        assert (admin.whoami().name, admin.whoami().role) == ("admin", "admin")
        made = admin.users.add("client-made", "reviewer")
        assert made.role == "reviewer" and made.key.startswith("rmk_")
        with Client(server.api, made.key) as reviewer:
            assert reviewer.whoami().name == "client-made"
            with pytest.raises(ClientAuthError, match="manage_users"):
                reviewer.audit()
        assert {"client-made", "viewer"} <= {u.name for u in admin.users.list()}
        fresh = admin.users.rotate("client-made")
        assert fresh.key != made.key
        assert admin.users.disable("client-made").disabled is True
        entries = admin.audit(limit=3, user="admin")
        assert [e.action for e in entries] == [
            f"POST /api/v2/serve/users/client-made/{step}" for step in ("disable", "rotate")
        ] + ["POST /api/v2/serve/users"]
        assert entries[2].after == {"name": "client-made"}
        with Client(server.api, fresh.key) as disabled, pytest.raises(ClientAuthError):
            disabled.whoami()


def test_the_users_command_refuses_bad_input_with_exit_code_2(tmp_path: Path) -> None:
    home = tmp_path / "cli"
    assert run("users", "add", "ann", "--role", "member", home=home).returncode == 0
    for args, said in (
        (("add", "bob", "--role", "boss"), "unknown role 'boss': use one of admin, member"),
        (("add", "ann", "--role", "viewer"), "user 'ann' already exists"),
        (("add", "config", "--role", "admin"), "invalid user name 'config'"),
        (("add", "a b", "--role", "admin"), "invalid user name 'a b'"),
        (("disable", "nobody"), "no user 'nobody'"),
        (("rotate", "nobody"), "no user 'nobody'"),
    ):
        done = run("users", *args, home=home)
        assert done.returncode == 2 and said in done.stderr, (args, done.stderr)
    listed = json.loads(run("users", "list", "--json", home=home).stdout)
    assert [(u["name"], u["role"], u["disabled"]) for u in listed] == [("ann", "member", False)]
    assert "rmk_" not in run("users", "list", home=home).stdout  # keys are never listed
