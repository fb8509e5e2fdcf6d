"""One OpenAI-compatible chat completion over HTTP: ``POST {base_url}/chat/completions`` with
httpx, the raw JSON body back. The engine reads only the reply's content and usage, so a typed
SDK adds nothing here but its import (~0.8-1 s of CPU on the way to a run's first request) and
~1 ms of CPU per request on the loop that sends the next one.

Failures come back as three exceptions the engine's retry policy tells apart: no reply in time
(``ChatTimeout``), no connection or a dropped one (``ChatConnectionError``), and an HTTP error
status (``ChatStatusError``, told by its status, type and size, never its body). Redirects are
not followed: an endpoint that moved says so instead of sending the key and the prompt
somewhere else."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import httpx

from ragmeter.errors import public_url

__all__ = ["ChatClient", "ChatConnectionError", "ChatStatusError", "ChatTimeout", "told"]

#: characters of an error answer's content type told in a message
_KIND_CHARS = 60
#: an error type told in a message: a plain name, no free text
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,59}")


class ChatTimeout(Exception):
    """No reply within the timeout."""


class ChatConnectionError(Exception):
    """No connection, or it dropped before the reply."""


class ChatStatusError(Exception):
    """An HTTP error status; ``message`` tells the answer's status, type and size (never
    its body)."""

    def __init__(self, status_code: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.message = message
        self.headers = headers


class ChatClient:
    """Chat completions at one OpenAI-compatible ``base_url`` with one key."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
            timeout=httpx.Timeout(timeout),
            # concurrency is the engine's limiter's to bound, not the pool's
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
            follow_redirects=False,
        )

    async def complete(
        self, body: dict[str, Any], on_written: Callable[[], None] | None = None
    ) -> bytes:
        """The raw JSON reply to one chat completion request; ``on_written`` is called when
        the request's body has been written to its connection (httpcore's ``trace``
        extension): the moment it leaves for the model, which a busy event loop or a new
        connection may put well after the call."""
        extensions = None if on_written is None else {"trace": _written_then(on_written)}
        try:
            response = await self._http.post(
                "chat/completions", content=json.dumps(body), extensions=extensions
            )
        except httpx.TimeoutException as exc:
            raise ChatTimeout(str(exc) or type(exc).__name__) from None
        except httpx.TransportError as exc:
            raise ChatConnectionError(_reason(exc)) from None
        except httpx.InvalidURL as exc:  # nothing to connect to
            raise ChatConnectionError(f"invalid URL: {exc}") from None
        if response.status_code >= 300:
            raise ChatStatusError(response.status_code, told(response), response.headers)
        return response.content

    async def aclose(self) -> None:
        await self._http.aclose()


#: httpcore's trace event once a request's body is written (the client speaks HTTP/1.1)
_BODY_WRITTEN = "http11.send_request_body.complete"


def _written_then(call: Callable[[], None]) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
    async def trace(event: str, _info: dict[str, Any]) -> None:
        if event == _BODY_WRITTEN:
            call()

    return trace


def _reason(exc: Exception) -> str:
    cause = exc.__cause__ or exc.__context__
    return str(exc) or str(cause or "") or type(exc).__name__


class Answer(Protocol):
    """An HTTP answer as ``told`` reads it (httpx's, or the one the openai SDK carries)."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> bytes: ...


def told(response: Answer) -> str:
    """What an error answer was, never what it said: its status, type and size, and the
    ``error.type`` (or ``code``) of an OpenAI-style JSON body when that is a plain name
    (``invalid_api_key``). A body is the endpoint's to word: an HTML error page or a proxy's
    message may hold anything (a password, a stack trace), and this text is stored in results
    every key reads. Where a redirect pointed is told, without its credentials."""
    if 300 <= response.status_code < 400:
        where = response.headers.get("location", "")
        to = f" to {public_url(where)}" if where else ""
        return f"the endpoint redirects{to}; give its final URL as the base URL"
    kind = response.headers.get("content-type", "").split(";")[0].strip()[:_KIND_CHARS]
    said = f"HTTP {response.status_code} ({kind or 'no type'}, {len(response.content):,} bytes)"
    name = _error_name(response.content) if "json" in kind else None
    return f"{said}, error type '{name}'" if name else said


def _error_name(body: bytes) -> str | None:
    """The ``error.type`` or ``error.code`` of a JSON error body when it is a plain name."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None
    for key in ("type", "code"):
        value = error.get(key)
        if isinstance(value, str) and _NAME.fullmatch(value):
            return value
    return None
