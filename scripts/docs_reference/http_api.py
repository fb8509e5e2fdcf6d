"""The HTTP API page: every route the service serves and what a key needs for it."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docs_reference.markdown import GENERATED, cell, code, table
from ragmeter.config import Settings, StoreConfig

# -- HTTP API ------------------------------------------------------------------------------

_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Service:
    """The service's OpenAPI schema and every (method, path) it serves, in or out of it."""

    schema: dict[str, Any]
    served: list[tuple[str, str]]


def service() -> Service:
    """The service as ``ragmeter serve`` builds it, over a throwaway store."""
    from ragmeter.service.app import create_app
    from ragmeter.service.permissions import app_routes

    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{Path(home) / 'ragmeter.db'}"
        app = create_app(Settings(store=StoreConfig(url=url)))
        found = app.state.services
        try:
            schema: dict[str, Any] = app.openapi()
            served = [(method, path) for method, path, _ in app_routes(app)]
        finally:
            found.manager.shutdown()
            found.kb.store.close()
    return Service(schema, served)


def _model_name(body: dict[str, Any] | None, models: dict[str, Any]) -> str:
    """The model a request or response body is (``Result[RunInfo]``), from its schema."""
    if not body:
        return ""
    content: dict[str, Any] = body.get("content", {})
    first: dict[str, Any] = next(iter(content.values()), {})
    schema: dict[str, Any] = first.get("schema", {})
    ref = schema.get("$ref") or schema.get("items", {}).get("$ref", "")
    name = ref.rsplit("/", 1)[-1]
    if "multipart/form-data" in content:
        return "form: " + ", ".join(models.get(name, {}).get("properties", {}))
    name = models.get(name, {}).get("title", name)
    if schema.get("type") == "array" and name:
        return f"list[{name}]"
    return name or str(schema.get("type", ""))


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    summary: str
    tag: str
    request: str
    response: str
    role: str


def _needs(method: str, path: str) -> str:
    from ragmeter.service.permissions import GRANTS, ROUTES

    rule = ROUTES.get((method, path))
    if rule is None:
        return "refused to all (no permission entry)"
    if rule.action is None:
        return "no key"
    roles = ", ".join(role.value for role, grants in GRANTS.items() if rule.action in grants)
    own = " (own)" if rule.owned else ""
    return f"`{rule.action.value}`{own}: {roles}"


def http_routes(schema: dict[str, Any]) -> list[Route]:
    """Every operation of the OpenAPI schema, in its order."""
    found = []
    models = schema.get("components", {}).get("schemas", {})
    for path, item in schema.get("paths", {}).items():
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            ok = next(
                (r for code_, r in op.get("responses", {}).items() if code_.startswith("2")), None
            )
            found.append(
                Route(
                    method.upper(),
                    path,
                    op.get("summary", ""),
                    (op.get("tags") or ["other"])[0],
                    _model_name(op.get("requestBody"), models),
                    _model_name(ok, models),
                    _needs(method.upper(), path),
                )
            )
    return found


def other_routes(served: Service) -> list[tuple[str, str]]:
    """Routes served but left out of the OpenAPI schema (DB-GPT's ``/api/v1`` routes, OTLP's
    ``/v1/traces``, the dashboard's pages and files, the schema and its page)."""
    listed = {(m.upper(), p) for p, item in served.schema.get("paths", {}).items() for m in item}
    return [(m, p) for m, p in served.served if (m, p) not in listed]


def http_page() -> str:
    served = service()
    routes = http_routes(served.schema)
    parts = [
        GENERATED,
        "# HTTP API",
        "",
        "Every route of `ragmeter serve`, from its OpenAPI schema (a running server serves it "
        "at `/openapi.json` and `/docs`). Calls carry `Authorization: Bearer KEY`; *needs* is "
        "the action the key's role must grant and the roles that grant it (*own*: a member "
        "changes only what they made).",
        "",
    ]
    by_tag: dict[str, list[Route]] = {}
    for route in routes:
        by_tag.setdefault(route.tag, []).append(route)
    for tag, found in by_tag.items():
        rows = [
            [
                code(f"{r.method} {r.path}"),
                cell(r.summary),
                code(r.request),
                code(r.response),
                r.role,
            ]
            for r in found
        ]
        parts += [
            f"## {tag}",
            "",
            table(["route", "summary", "request", "response", "needs"], rows),
            "",
        ]
    others = [[code(f"{m} {p}"), _needs(m, p)] for m, p in other_routes(served)]
    parts += [
        "## Outside the schema",
        "",
        "Served but not in the OpenAPI schema: DB-GPT's `/api/v1` routes (its page and "
        "client), OTLP's `/v1/traces`, the dashboard's pages and files, the schema and its page.",
        "",
        table(["route", "needs"], others),
        "",
    ]
    return "\n".join(parts)
