"""ASGI middleware: Bearer keys on every path but ``/health``, and a cap on request bodies."""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ragmeter.service.envelope import error_response

__all__ = ["OPEN_PATHS", "BearerAuth", "BodyLimit"]

#: answered without a key (a load balancer's probe)
OPEN_PATHS = frozenset({"/health"})


class BearerAuth:
    """401 in the envelope unless ``Authorization: Bearer <key>`` holds a configured key.
    With no keys configured every request passes (the server then binds loopback only)."""

    def __init__(self, app: ASGIApp, keys: Sequence[str]) -> None:
        self.app = app
        self.keys = [k.encode() for k in keys]

    def _allowed(self, scope: Scope) -> bool:
        header = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                header = value
                break
        scheme, _, token = header.partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            return False
        token = token.strip()
        # compare with every key, always, so timing does not tell which one nearly matched
        matches = [hmac.compare_digest(token, key) for key in self.keys]
        return any(matches)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.keys or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if not self._allowed(scope):
            response = error_response(
                401,
                "unauthorized",
                "missing or wrong API key: send 'Authorization: Bearer <key>' with a key from "
                "[server] api_keys or $RAGMETER_API_KEYS",
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """413 in the envelope when a request declares a body over ``limit`` bytes; 411 for a
    body sent without a length (chunked), which could not be bounded before parsing."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _check(self, scope: Scope) -> JSONResponse | None:
        headers = dict(scope.get("headers", []))
        length = headers.get(b"content-length")
        if length is None:
            if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
                return error_response(
                    411, "length_required", "send the request body with a Content-Length"
                )
            return None
        if not length.isdigit():
            return error_response(400, "invalid_request", "Content-Length is not a number")
        if int(length) > self.limit:
            mb = self.limit / 1_000_000
            return error_response(
                413, "too_large", f"request body is larger than {mb:g} MB ([server] max_request_mb)"
            )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._check(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)
