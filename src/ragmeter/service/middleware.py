"""ASGI middleware: Bearer keys on every path but ``/health``, loopback Host names when no key is
set, and a cap on request bodies."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ragmeter.service.envelope import error_response

__all__ = ["OPEN_PATHS", "BearerAuth", "BodyLimit", "LoopbackHosts", "is_loopback_host"]

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


def is_loopback_host(header: str) -> bool:
    """Whether a Host header names this machine: ``localhost`` or a loopback address, with or
    without a port (``127.0.0.1:5670``, ``[::1]:5670``)."""
    host = header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else ""
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    host = host.rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LoopbackHosts:
    """With no API keys the server trusts whoever reaches it on loopback, so it refuses any
    Host header that is not a loopback name: a web page that made its own domain resolve to
    127.0.0.1 (DNS rebinding) sends that domain, and gets a 403 instead of the API."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = next((v for k, v in scope.get("headers", []) if k == b"host"), b"")
            text = host.decode("latin-1")
            if not is_loopback_host(text):
                response = error_response(
                    403,
                    "forbidden_host",
                    f"Host {text!r} is not a loopback name: with no API keys this server only "
                    "answers requests for localhost or 127.0.0.1 (set [server] api_keys to serve "
                    "other names)",
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
