"""Who may call what: each role's actions, and the one table of every route's action.

Every route of the app has an entry here (a test enumerates the app's routes against it); a
route without one is refused to everyone. ``authorize`` (a dependency of every API route)
checks the table and the owner of the one object a route changes (``require_owner``; the
dataset upload routes call it for the name they add a version to)."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request

from ragmeter.errors import clip
from ragmeter.service.envelope import ApiError
from ragmeter.store.users import Role, User, creators

__all__ = [
    "GRANTS",
    "ROUTES",
    "Action",
    "Rule",
    "app_routes",
    "authorize",
    "endpoint_rules",
    "request_user",
    "require_owner",
]


class Action(enum.StrEnum):
    """What a route needs. ``write_own`` makes runs, datasets and spaces and changes those
    the user made (an admin changes any)."""

    READ = "read"
    LABEL = "label"
    WRITE_OWN = "write_own"
    MANAGE_MODELS = "manage_models"
    MANAGE_APPS = "manage_apps"
    MANAGE_PROMPTS = "manage_prompts"
    MANAGE_SECRETS = "manage_secrets"
    MANAGE_USERS = "manage_users"
    #: send production traces (OTLP); an ``ingest`` key may do nothing else
    INGEST = "ingest"
    MANAGE_ALERTS = "manage_alerts"


GRANTS: dict[Role, frozenset[Action]] = {
    Role.ADMIN: frozenset(Action),
    Role.MEMBER: frozenset({Action.READ, Action.WRITE_OWN, Action.LABEL}),
    Role.REVIEWER: frozenset({Action.READ, Action.LABEL}),
    Role.VIEWER: frozenset({Action.READ}),
    Role.INGEST: frozenset({Action.INGEST}),
}


@dataclass(frozen=True)
class Rule:
    """A route's need: ``action`` (None: open to anyone, no key) on objects of ``kind``;
    ``owned``: the path or query parameter naming the one object it changes, which must be
    the user's own (an admin's: any)."""

    action: Action | None
    kind: str
    owned: str | None = None


_V2 = "/api/v2/serve"
_RUN = f"{_V2}/evaluate/runs/{{run_id}}"
_SPACE = f"{_V2}/knowledge/spaces/{{space}}"
_DATASET = f"{_V2}/datasets/{{dataset}}"
_OPEN = Rule(None, "public")
R, W = Action.READ, Action.WRITE_OWN


#: (method, path) -> what the route needs; the same path of /api/v2/serve and /api/v1 alike
ROUTES: dict[tuple[str, str], Rule] = {
    # the probe, the dashboard's page, its files and its key form need no key
    ("GET", "/health"): _OPEN,
    ("GET", "/"): _OPEN,
    ("GET", "/ui/assets"): _OPEN,
    ("GET", "/ui/session"): _OPEN,
    ("POST", "/ui/session"): _OPEN,
    ("POST", "/ui/logout"): Rule(R, "session"),
    ("GET", "/openapi.json"): Rule(R, "docs"),
    ("GET", "/docs"): Rule(R, "docs"),
    ("GET", "/docs/assets"): Rule(R, "docs"),
    # evaluation (DB-GPT's routes, v2 and v1)
    **{
        entry: rule
        for prefix in (f"{_V2}/evaluate", "/api/v1/evaluate")
        for entry, rule in {
            ("POST", f"{prefix}/evaluation"): Rule(W, "run"),
            ("GET", f"{prefix}/scenes"): Rule(R, "metric"),
            ("GET", f"{prefix}/metrics"): Rule(R, "metric"),
        }.items()
    },
    # runs
    ("POST", f"{_V2}/evaluate/runs"): Rule(W, "run"),
    ("GET", f"{_V2}/evaluate/runs"): Rule(R, "run"),
    ("GET", _RUN): Rule(R, "run"),
    ("PATCH", _RUN): Rule(W, "run", "run_id"),
    ("DELETE", _RUN): Rule(W, "run", "run_id"),
    ("GET", f"{_RUN}/changes/{{other_id}}"): Rule(R, "run"),
    ("GET", f"{_RUN}/results"): Rule(R, "run"),
    ("GET", f"{_RUN}/rows"): Rule(R, "run"),
    ("GET", f"{_RUN}/rows/{{row_index}}"): Rule(R, "run"),
    ("GET", f"{_RUN}/distribution"): Rule(R, "run"),
    ("GET", f"{_RUN}/compare/{{other_id}}"): Rule(R, "run"),
    ("GET", f"{_RUN}/compare/{{other_id}}/rows"): Rule(R, "run"),
    ("GET", f"{_RUN}/compare/{{other_id}}/scatter"): Rule(R, "run"),
    ("GET", f"{_RUN}/agreement"): Rule(R, "run"),
    ("POST", f"{_RUN}/cancel"): Rule(W, "run", "run_id"),
    ("POST", f"{_RUN}/resume"): Rule(W, "run", "run_id"),
    # review queues and the caller's own labels of a row
    ("POST", f"{_RUN}/reviews"): Rule(W, "run", "run_id"),
    ("GET", f"{_RUN}/reviews"): Rule(R, "run"),
    ("GET", f"{_RUN}/reviews/{{queue_id}}"): Rule(R, "run"),
    ("GET", f"{_RUN}/rows/{{row_index}}/labels"): Rule(R, "label"),
    ("PUT", f"{_RUN}/rows/{{row_index}}/labels"): Rule(Action.LABEL, "label"),
    ("DELETE", f"{_RUN}/rows/{{row_index}}/labels"): Rule(Action.LABEL, "label"),
    # knowledge spaces and test sets
    ("POST", f"{_V2}/knowledge/spaces"): Rule(W, "space"),
    ("GET", f"{_V2}/knowledge/spaces"): Rule(R, "space"),
    ("GET", _SPACE): Rule(R, "space"),
    ("DELETE", _SPACE): Rule(W, "space", "space"),
    ("POST", f"{_SPACE}/documents"): Rule(W, "space", "space"),
    ("GET", f"{_SPACE}/documents"): Rule(R, "space"),
    ("GET", f"{_SPACE}/chunks"): Rule(R, "space"),
    ("POST", f"{_SPACE}/retrieve"): Rule(R, "space"),
    ("POST", f"{_SPACE}/testsets"): Rule(W, "dataset"),
    ("GET", f"{_V2}/knowledge/testsets/{{job_id}}"): Rule(R, "dataset"),
    ("POST", f"{_V2}/knowledge/testsets/{{job_id}}/cancel"): Rule(W, "testset", "job_id"),
    # prompts, apps, models
    ("POST", f"{_V2}/prompts"): Rule(Action.MANAGE_PROMPTS, "prompt"),
    ("GET", f"{_V2}/prompts"): Rule(R, "prompt"),
    ("GET", f"{_V2}/prompts/{{code}}"): Rule(R, "prompt"),
    ("DELETE", f"{_V2}/prompts/{{code}}"): Rule(Action.MANAGE_PROMPTS, "prompt"),
    ("POST", f"{_V2}/apps"): Rule(Action.MANAGE_APPS, "app"),
    ("GET", f"{_V2}/apps"): Rule(R, "app"),
    ("GET", f"{_V2}/apps/{{app}}"): Rule(R, "app"),
    ("DELETE", f"{_V2}/apps/{{app}}"): Rule(Action.MANAGE_APPS, "app"),
    ("GET", f"{_V2}/models"): Rule(R, "model"),
    ("GET", f"{_V2}/judge/cards"): Rule(R, "judge_card"),
    # datasets
    ("POST", f"{_V2}/datasets"): Rule(W, "dataset"),
    ("POST", f"{_V2}/datasets/trec"): Rule(W, "dataset"),
    ("GET", f"{_V2}/datasets"): Rule(R, "dataset"),
    ("GET", _DATASET): Rule(R, "dataset"),
    ("GET", f"{_DATASET}/versions"): Rule(R, "dataset"),
    ("DELETE", _DATASET): Rule(W, "dataset", "dataset"),
    ("GET", f"{_DATASET}/rows"): Rule(R, "dataset"),
    # users and the audit log
    ("GET", f"{_V2}/users"): Rule(Action.MANAGE_USERS, "user"),
    ("POST", f"{_V2}/users"): Rule(Action.MANAGE_USERS, "user"),
    ("POST", f"{_V2}/users/{{name}}/disable"): Rule(Action.MANAGE_USERS, "user"),
    ("POST", f"{_V2}/users/{{name}}/rotate"): Rule(Action.MANAGE_USERS, "user"),
    ("GET", f"{_V2}/audit"): Rule(Action.MANAGE_USERS, "audit"),
    ("GET", f"{_V2}/whoami"): Rule(R, "user"),
    # DB-GPT's evaluation page and its frame (v1)
    ("GET", "/api/v1/evaluate/datasets"): Rule(R, "dataset"),
    ("POST", "/api/v1/evaluate/dataset/upload"): Rule(W, "dataset"),
    ("POST", "/api/v1/evaluate/dataset/upload/file"): Rule(W, "dataset"),
    ("POST", "/api/v1/evaluate/dataset/upload/content"): Rule(W, "dataset"),
    ("POST", "/api/v1/evaluate/dataset/members/update"): Rule(W, "dataset"),
    ("DELETE", "/api/v1/evaluate/dataset"): Rule(W, "dataset", "code"),
    ("GET", "/api/v1/evaluate/dataset/download"): Rule(R, "dataset"),
    ("GET", "/api/v1/evaluate/storage/types"): Rule(R, "dataset"),
    ("GET", "/api/v1/evaluate/test_auth"): Rule(R, "session"),
    ("GET", "/api/v1/evaluate/evaluations"): Rule(R, "run"),
    ("POST", "/api/v1/evaluate/start"): Rule(W, "run"),
    ("DELETE", "/api/v1/evaluate/evaluation"): Rule(W, "run", "evaluation_code"),
    ("GET", "/api/v1/evaluate/evaluation/detail/show"): Rule(R, "run"),
    ("GET", "/api/v1/evaluate/evaluation/result/download"): Rule(R, "run"),
    ("POST", "/api/v1/knowledge/space/list"): Rule(R, "space"),
    ("POST", "/api/v1/app/list"): Rule(R, "app"),
    ("GET", "/api/v1/model/types"): Rule(R, "model"),
    ("GET", "/api/v1/chat/dialogue/list"): Rule(R, "session"),
    # human labels of a dataset version's rows (over the dataset or a run of it)
    ("POST", f"{_DATASET}/labels"): Rule(Action.LABEL, "label"),
    ("GET", f"{_DATASET}/labels"): Rule(R, "label"),
    ("POST", f"{_RUN}/labels"): Rule(Action.LABEL, "label"),
    ("GET", f"{_RUN}/labels"): Rule(R, "label"),
    # production traces: the OTLP receiver, the list, one trace, traces saved as a dataset
    ("POST", "/v1/traces"): Rule(Action.INGEST, "trace"),
    ("GET", f"{_V2}/traces"): Rule(R, "trace"),
    ("GET", f"{_V2}/traces/{{trace_id}}"): Rule(R, "trace"),
    ("POST", f"{_V2}/traces/dataset"): Rule(W, "dataset"),
    # online evaluation rules: members make them and change their own (an admin, any)
    ("GET", f"{_V2}/online/rules"): Rule(R, "online_rule"),
    ("GET", f"{_V2}/online/rules/{{name}}"): Rule(R, "online_rule"),
    ("POST", f"{_V2}/online/rules"): Rule(W, "online_rule"),
    ("PUT", f"{_V2}/online/rules/{{name}}"): Rule(W, "online_rule", "name"),
    ("PATCH", f"{_V2}/online/rules/{{name}}"): Rule(W, "online_rule", "name"),
    ("DELETE", f"{_V2}/online/rules/{{name}}"): Rule(W, "online_rule", "name"),
    # monitors of production traces and alert rules (a rule makes the server post to a URL
    # on its own: configured by admins, as apps are)
    ("GET", f"{_V2}/online/monitor"): Rule(R, "monitor"),
    ("POST", f"{_V2}/online/alerts"): Rule(Action.MANAGE_ALERTS, "alert"),
    ("GET", f"{_V2}/online/alerts"): Rule(R, "alert"),
    ("GET", f"{_V2}/online/alerts/{{name}}"): Rule(R, "alert"),
    ("PATCH", f"{_V2}/online/alerts/{{name}}"): Rule(Action.MANAGE_ALERTS, "alert"),
    ("DELETE", f"{_V2}/online/alerts/{{name}}"): Rule(Action.MANAGE_ALERTS, "alert"),
    ("GET", f"{_V2}/online/alert-events"): Rule(R, "alert"),
    # reviewers' flags on production traces: each user's own (an admin removes anyone's)
    ("PUT", f"{_V2}/traces/{{trace_id}}/flag"): Rule(Action.LABEL, "trace_flag"),
    ("DELETE", f"{_V2}/traces/{{trace_id}}/flag"): Rule(Action.LABEL, "trace_flag"),
}


def app_routes(app: FastAPI) -> Iterator[tuple[str, str, Any]]:
    """Every (method, path, endpoint) ``app`` serves, through included routers (HEAD of a
    GET route left out; a mount as GET of its path, endpoint None)."""
    for method, path, route in _walk(app.router.routes, ""):
        yield method, path, getattr(route, "endpoint", None)


def _walk(routes: Any, prefix: str) -> Iterator[tuple[str, str, Any]]:
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:  # FastAPI >= 0.130 keeps included routers whole
            yield from _walk(included.routes, prefix + route.include_context.prefix)
            continue
        path = prefix + route.path
        methods = getattr(route, "methods", None) or {"GET"}
        for method in sorted(set(methods) - {"HEAD"}):
            yield method, path, route


def endpoint_rules(app: FastAPI) -> dict[tuple[str, Any], Rule]:
    """(method, endpoint) -> rule for every route of ``app`` with an entry in ``ROUTES``; an
    endpoint served at two paths (v2 and v1) must need the same at both."""
    found: dict[tuple[str, Any], Rule] = {}
    for method, path, endpoint in app_routes(app):
        rule = ROUTES.get((method, path))
        if rule is None or endpoint is None:
            continue
        if found.setdefault((method, endpoint), rule) != rule:
            raise AssertionError(f"{method} {path}: its endpoint needs another rule elsewhere")
    return found


def request_user(request: Request) -> User:
    """The user ``request`` was authorised as (set by ``middleware.BearerAuth``)."""
    user: User = request.scope["ragmeter.user"]
    return user


def _who_may(action: Action) -> str:
    return ", ".join(role.value for role, grants in GRANTS.items() if action in grants)


def forbidden(user: User, needs: str) -> ApiError:
    return ApiError(
        403,
        "forbidden",
        f"user '{user.name}' has role '{user.role.value}', which may not {needs}",
    )


async def authorize(request: Request) -> None:
    """Dependency of every API route: 403 unless the user's role grants the route's action
    (a route missing from ``ROUTES`` is refused to all). A change is noted for the audit log."""
    rules: dict[tuple[str, Any], Rule] = request.app.state.route_rules
    rule = rules.get((request.method, request.scope.get("endpoint")))
    if rule is None:
        raise ApiError(403, "forbidden", "this route has no entry in the permission table")
    if rule.action is None:
        return
    user: User | None = request.scope.get("ragmeter.user")
    if user is None:  # an open path's route that is not open (kept in step by a test)
        raise ApiError(401, "unauthorized", "this route needs an API key")
    if rule.action not in GRANTS[user.role]:
        needs = f"{rule.action.value} (roles: {_who_may(rule.action)})"
        raise forbidden(user, f"{request.method} {request.url.path}: that needs {needs}")
    # the ids the request names: its path's, and the query's one naming the object (a query
    # string may carry secrets; nothing else of it is kept)
    ids = dict(request.path_params)
    if rule.owned is not None and rule.owned in request.query_params:
        ids[rule.owned] = request.query_params[rule.owned]
    if rule.owned is not None:
        await require_owner(request, rule.kind, str(ids.get(rule.owned, "")))
    if rule.action is not Action.READ:
        request.scope["ragmeter.audit"] = (rule.kind, ids)


async def require_owner(request: Request, kind: str, key: str) -> None:
    """403 unless the request's user is an admin or made every object of ``kind`` that
    ``key`` names (a dataset's name: every version). Objects made with no user (before
    users, or by the CLI) are an admin's to change. None found: nothing to refuse."""
    user = request_user(request)
    if user.role is Role.ADMIN:
        return
    if kind == "testset":  # generations have their own table (``runs.storage.testset_jobs``)
        made_by = await asyncio.to_thread(request.app.state.services.testsets.creators, key)
    elif kind == "online_rule":  # stored rules (ragmeter.toml's are changed in the file)
        made_by = await asyncio.to_thread(request.app.state.services.online.creators, key)
    else:
        made_by = await asyncio.to_thread(creators, request.app.state.services.kb.store, kind, key)
    others = {who for who in made_by if who != user.name}
    if not others:
        return
    owner = ", ".join(
        sorted(f"'{who}'" if who else "no user (before users, or the CLI)" for who in others)
    )
    what = f"{kind} '{clip(key)}'"
    raise forbidden(user, f"change {what}, made by {owner}: a member changes what they made")


def permission_table() -> str:
    """``ROUTES`` as the Markdown table of docs/security.md (a test keeps the two equal;
    ``python scripts/permission_table.py`` writes it there)."""
    roles = [role.value for role in Role]
    lines = [
        "| route | needs | " + " | ".join(roles) + " |",
        "|---|---|" + "---|" * len(roles),
    ]
    for (method, path), rule in ROUTES.items():
        if rule.action is None:
            needs, marks = "no key", ["yes"] * len(roles)
        else:
            action = rule.action
            needs = f"`{action.value}`" + (" (own)" if rule.owned else "")
            own = "own" if rule.owned else "yes"
            marks = [
                ("yes" if role is Role.ADMIN else own) if action in GRANTS[role] else "403"
                for role in Role
            ]
        lines.append(f"| `{method} {path}` | {needs} | " + " | ".join(marks) + " |")
    return "\n".join(lines) + "\n"
