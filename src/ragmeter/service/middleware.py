"""ASGI middleware: Bearer keys (or a dashboard session) on every path but ``/health`` and the
dashboard's page, loopback Host names when no key is set, a cap on request bodies and one on
how deep a JSON body nests."""

from __future__ import annotations

import asyncio
import email.message
import json
import re
from collections.abc import Mapping

from starlette.requests import cookie_parser
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragmeter.service.dashboard.routes import OPEN_PREFIX, SESSION_PATH
from ragmeter.service.dashboard.sessions import (
    CSRF_HEADER,
    GuessLimit,
    Session,
    SessionStore,
    cookie_name,
    is_loopback_host,
    too_many_guesses,
)
from ragmeter.service.envelope import error_response
from ragmeter.service.identity import LOCAL_USER, Keyring
from ragmeter.store.actor import acting_as
from ragmeter.store.users import KEY_PREFIX, User

__all__ = [
    "OPEN_PATHS",
    "BearerAuth",
    "BodyLimit",
    "JsonDepthLimit",
    "LoopbackHosts",
    "is_loopback_host",
    "json_too_deep",
    "parsed_as_json",
]

#: answered without a key: a load balancer's probe, the dashboard's page and its key form
OPEN_PATHS = frozenset({"/health", "/", SESSION_PATH})


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _is_open(path: str) -> bool:
    """Paths answered without a key: the probe, the dashboard's page, files and key form."""
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIX)


class BearerAuth:
    """Who is calling: the user of ``Authorization: Bearer <key>`` (``identity.Keyring``), or
    of the cookie of a live dashboard session, put in the scope (``ragmeter.user``, and
    ``request.state.user``) and made the actor of what the request stores; else 401 in the
    envelope. A POST, PUT, PATCH or DELETE authorised by the cookie must also carry the
    session's CSRF token header, else 403. With no keys and no users every request acts as
    the admin ``local`` (the server then binds loopback only). What each user may do is
    checked per route (``permissions.authorize``)."""

    def __init__(
        self, app: ASGIApp, keyring: Keyring, sessions: SessionStore, guesses: GuessLimit
    ) -> None:
        self.app = app
        self.keyring = keyring
        self.sessions = sessions
        self.guesses = guesses

    async def _key_user(self, headers: dict[bytes, bytes]) -> User | None:
        scheme, _, token = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            return None
        key = token.strip().decode("latin-1")
        user = self.keyring.configured(key)
        if user is None and key.startswith(KEY_PREFIX):
            user = await asyncio.to_thread(self.keyring.users.resolve, key)
        return user

    async def _session(self, scope: Scope, headers: dict[bytes, bytes]) -> Session | None:
        cookies = cookie_parser(headers.get(b"cookie", b"").decode("latin-1"))
        cookie = cookie_name(
            scope.get("scheme", "http"), headers.get(b"host", b"").decode("latin-1")
        )
        session = (
            await asyncio.to_thread(self.sessions.get, cookies[cookie])
            if cookie in cookies
            else None
        )
        if session is None or session.user.key_prefix is None:
            return session
        if await asyncio.to_thread(self.keyring.still_valid, session.user):
            return session
        await asyncio.to_thread(self.sessions.end, session.id)  # its user was disabled or re-keyed
        return None

    async def _authenticate(self, scope: Scope) -> User | JSONResponse:
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", []):
            headers.setdefault(name, value)  # the first of each, as the routes read them
        # a key guesses; a session id (256 random bits) cannot be guessed, and a browser's
        # expired cookie must not lock its user out
        presented = b"authorization" in headers
        client = (scope.get("client") or ("",))[0] or ""
        if presented and (wait := self.guesses.wait(client)):
            return too_many_guesses(wait)
        user = await self._key_user(headers)
        if user is not None:
            return user
        session = await self._session(scope, headers)
        if session is None:
            if presented:
                self.guesses.wrong(client)
            return error_response(
                401,
                "unauthorized",
                "missing or wrong API key (or a disabled user's): send 'Authorization: Bearer "
                "<key>' with a key from [server] api_keys, $RAGMETER_API_KEYS or 'ragmeter "
                "users add'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if scope.get("method", "GET") in _SAFE_METHODS:
            return session.user
        token = headers.get(CSRF_HEADER.lower().encode())
        if not SessionStore.csrf_ok(session, None if token is None else token.decode("latin-1")):
            return error_response(
                403,
                "csrf",
                f"missing or wrong {CSRF_HEADER} header: a {scope.get('method')} authorised by "
                "the dashboard's session cookie must send the token GET /ui/session answers",
            )
        return session.user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        user: User | None
        if not self.keyring.required():  # a read of the store once a second at most
            user = LOCAL_USER
        elif _is_open(scope["path"]):
            user = None  # the open routes say who is signed in themselves
        else:
            found = await self._authenticate(scope)
            if isinstance(found, JSONResponse):
                await found(scope, receive, send)
                return
            user = found
        scope["ragmeter.user"] = user
        scope.setdefault("state", {})["user"] = user
        with acting_as(user.name if user else None):
            await self.app(scope, receive, send)


def _from_another_site(headers: dict[bytes, bytes]) -> str | None:
    """Why a state-changing request looks sent by a web page of another site, or None. A
    browser marks its requests: ``Sec-Fetch-Site`` says where they come from, ``Origin`` names
    the page's site (``null`` from sandboxed frames and files)."""
    fetch_site = headers.get(b"sec-fetch-site", b"").decode("latin-1").lower()
    if fetch_site in ("cross-site", "same-site"):
        return f"Sec-Fetch-Site: {fetch_site}"
    origin = headers.get(b"origin")
    if origin is None:
        return None  # not a browser's cross-site request (curl, clients, same-origin GETs)
    text = origin.decode("latin-1")
    host = text.split("://", 1)[1] if "://" in text else ""
    return None if is_loopback_host(host) else f"Origin {text!r}"


class LoopbackHosts:
    """With no API keys the server trusts whoever reaches it on loopback. So it refuses any
    Host header that is not a loopback name (a web page that made its own domain resolve to
    127.0.0.1, DNS rebinding, sends that domain), and any request that changes something when
    a browser says it comes from a page of another site (a form or a multipart upload needs no
    CORS preflight): both get a 403 instead of the API."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        headers = dict(scope.get("headers", []))
        host = headers.get(b"host", b"").decode("latin-1")
        if not is_loopback_host(host):
            return error_response(
                403,
                "forbidden_host",
                f"Host {host!r} is not a loopback name: with no API keys this server only "
                "answers requests for localhost or 127.0.0.1 (set [server] api_keys to serve "
                "other names)",
            )
        if scope.get("method", "GET") in _SAFE_METHODS:
            return None
        why = _from_another_site(headers)
        if why is None:
            return None
        return error_response(
            403,
            "cross_site_request",
            f"refused a {scope.get('method')} sent by a web page of another site ({why}): with "
            "no API keys this server takes changes only from this machine's own programs",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BodyLimit:
    """413 in the envelope when a request declares a body over ``limit`` bytes (``[server]
    max_request_mb``; a path of ``paths`` has its own limit and setting); 411 for a body sent
    without a length (chunked), which could not be bounded before parsing."""

    def __init__(
        self,
        app: ASGIApp,
        limit: int,
        paths: Mapping[str, tuple[int, str]] | None = None,
    ) -> None:
        self.app = app
        self.limit = limit
        self.paths = dict(paths or {})

    def _check(self, scope: Scope) -> JSONResponse | None:
        limit, setting = self.paths.get(scope["path"], (self.limit, "[server] max_request_mb"))
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
        if int(length) > limit:
            mb = limit / 1_000_000
            return error_response(
                413, "too_large", f"request body is larger than {mb:g} MB ({setting})"
            )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._check(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


#: bodies up to this size are scanned on the event loop (well under a millisecond)
_SCAN_ON_LOOP = 1 << 16
#: what changes JSON nesting outside strings: a string's start, an opening or closing bracket
_STRUCTURE = re.compile(rb'["\[\]{}]')
#: the rest of a string after its opening quote (escapes skipped; no backtracking)
_STRING_REST = re.compile(rb'(?:[^"\\]++|\\.)*+"', re.DOTALL)


def json_too_deep(body: bytes, limit: int) -> bool:
    """Whether ``body`` nests arrays and objects deeper than ``limit``, found by one linear
    scan (strings skipped whole) before any parser recurses into it. Malformed JSON that
    is not too deep is left for the parser to refuse."""
    depth = 0
    position = 0
    while (found := _STRUCTURE.search(body, position)) is not None:
        char = body[found.start()]
        position = found.end()
        if char == 0x22:  # '"'
            rest = _STRING_REST.match(body, position)
            if rest is None:
                return False  # an unterminated string: invalid JSON, refused by the parser
            position = rest.end()
        elif char in (0x5B, 0x7B):  # '[' '{'
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def parsed_as_json(content_type: str) -> bool:
    """Whether FastAPI parses a body of this content type as JSON, by its own rule
    (``fastapi.routing``): none, ``application/json`` or ``application/<anything>+json`` as
    ``email.message`` reads it, so no spelling FastAPI takes for JSON escapes the depth check."""
    if not content_type:
        return True
    message = email.message.Message()
    message["content-type"] = content_type
    if message.get_content_maintype() != "application":
        return False
    subtype = message.get_content_subtype()
    return subtype == "json" or subtype.endswith("+json")


class JsonDepthLimit:
    """400 in the envelope when a request body FastAPI parses as JSON (``parsed_as_json``) nests
    it deeper than ``limit``: parsing it would exhaust the stack, and what is stored
    must be readable back. The body is read here (its size is capped by ``BodyLimit``,
    which runs first) and passed on unchanged."""

    def __init__(self, app: ASGIApp, limit: int, exempt: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.limit = limit
        #: paths whose bodies are read by their route with caps of its own
        self.exempt = exempt

    def _scanned(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            return False
        if scope["path"] in self.exempt:
            return False
        for name, value in scope.get("headers", []):
            if name == b"content-type":  # the first one, as FastAPI reads it
                return parsed_as_json(value.decode("latin-1"))
        return True  # no content type: FastAPI parses the body as JSON

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._scanned(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if json.detect_encoding(body[:4]) not in ("utf-8", "utf-8-sig"):
            # the scan reads UTF-8; the parser would also take UTF-16 and UTF-32, where a
            # character can hide a quote from the scan (RFC 8259: JSON is sent as UTF-8)
            response = error_response(
                415, "not_utf8", "a JSON body must be encoded as UTF-8 (RFC 8259)"
            )
            await response(scope, receive, send)
            return
        if len(body) <= _SCAN_ON_LOOP:
            too_deep = json_too_deep(body, self.limit)
        else:  # a large body is scanned off the event loop, which serves other requests
            too_deep = await asyncio.to_thread(json_too_deep, body, self.limit)
        if too_deep:
            response = error_response(
                400,
                "too_deep",
                f"the JSON body nests deeper than {self.limit} levels ([server] max_json_depth)",
            )
            await response(scope, receive, send)
            return
        replay: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay([replay], receive), send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that first hands out ``messages``, then defers to the real one."""
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
