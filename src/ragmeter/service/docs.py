"""The API's documentation page, ``/docs``: Swagger UI served by this server from the files
the ``fastapi-offline`` package ships, never from a CDN, under a Content-Security-Policy that
runs only those files and the page's own start-up script (by its hash). ReDoc is not served."""

from __future__ import annotations

import base64
import hashlib
import re
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from ragmeter.service.envelope import error_response
from ragmeter.service.permissions import GRANTS, Action, forbidden

__all__ = ["DOCS_ASSETS", "DOCS_PATH", "OPENAPI_PATH", "docs_policy", "mount_docs"]

DOCS_PATH = "/docs"
OPENAPI_PATH = "/openapi.json"
#: Swagger UI's script, style sheet and icon
DOCS_ASSETS = "/docs/assets"
_INLINE = re.compile(rb"<script>(.*?)</script>", re.DOTALL)


def docs_policy(page: bytes) -> str:
    """The Content-Security-Policy of ``page``: scripts from this server and the page's own
    inline scripts (each by its SHA-256), nothing from any other origin, no framing."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE.findall(page)
    )
    return (
        f"default-src 'none'; script-src 'self' {hashes}; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; font-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def readers_only(app: ASGIApp) -> ASGIApp:
    """``app`` (files of a mount, which no route dependency checks) for users whose role may
    read; 403 in the envelope for others (an ``ingest`` key)."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("ragmeter.user")
        if user is not None and Action.READ not in GRANTS[user.role]:
            needs = f"{scope.get('method', 'GET')} {scope['path']}: that needs read"
            refused = forbidden(user, needs)
            response = error_response(refused.status, refused.code, refused.message)
            await response(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded


def mount_docs(app: FastAPI) -> None:
    """Serve ``/docs``, its files and ``/openapi.json`` (the app is made with ``docs_url``
    and ``openapi_url`` None)."""
    folder = Path(str(files("fastapi_offline") / "static"))
    files_app = StaticFiles(directory=folder)
    app.mount(DOCS_ASSETS, readers_only(files_app), name="docs-assets")
    page = bytes(
        get_swagger_ui_html(
            openapi_url=OPENAPI_PATH,
            title=f"{app.title} API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
        ).body
    )
    headers = {"Content-Security-Policy": docs_policy(page), "Cache-Control": "no-cache"}

    @app.get(DOCS_PATH, include_in_schema=False)
    def docs() -> HTMLResponse:
        """Swagger UI for this server's OpenAPI schema."""
        return HTMLResponse(page, headers=headers)

    @app.get(OPENAPI_PATH, include_in_schema=False)
    def openapi() -> JSONResponse:
        """The OpenAPI schema: a route of the app (FastAPI's own would skip the role check an
        ``ingest`` key must fail)."""
        return JSONResponse(app.openapi())
