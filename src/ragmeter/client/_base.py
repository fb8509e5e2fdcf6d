"""What both clients share: where the service is, the key, and the request each call makes."""

from __future__ import annotations

import os
from typing import Any, TypeVar

import httpx

from ragmeter.client._calls import Call, read_envelope
from ragmeter.client._errors import ClientConnectionError, ClientError
from ragmeter.errors import redact

__all__ = ["DEFAULT_API_BASE", "FINISHED", "KEY_ENV", "ClientBase"]

T = TypeVar("T")

DEFAULT_API_BASE = "http://localhost:5670/api/v2"
KEY_ENV = "RAGMETER_API_KEY"
FINISHED = frozenset({"done", "failed", "cancelled"})
#: how long an idle pooled connection is reused: under the server's 5 s keep-alive
#: (uvicorn's default), so a request never goes out on a connection the server is closing
#: ("Server disconnected without sending a response")
POOL_LIMITS = httpx.Limits(keepalive_expiry=2.0)


class ClientBase:
    """``api_base`` as DB-GPT's client takes it (``.../api/v2``); calls go to its
    ``/serve/...`` routes. ``api_key`` defaults to ``$RAGMETER_API_KEY``."""

    def __init__(
        self, api_base: str = DEFAULT_API_BASE, api_key: str | None = None, timeout: float = 60.0
    ) -> None:
        self.api_base = api_base.rstrip("/")
        key = api_key if api_key is not None else os.environ.get(KEY_ENV)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._timeout = timeout

    @property
    def base_url(self) -> str:
        return f"{self.api_base}/serve"

    def _request_kwargs(self, call: Call[Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"params": call.params}
        if call.json is not None:
            kwargs["json"] = call.json
        if call.files is not None:
            kwargs["files"] = call.files
        if call.form is not None:
            kwargs["data"] = call.form
        if call.long:
            kwargs["timeout"] = httpx.Timeout(self._timeout, read=None)
        return kwargs

    def _failed(self, exc: httpx.HTTPError) -> ClientError:
        """The error for a call httpx could not complete: the server unreachable or silent
        is a ClientConnectionError, anything else (a redirect loop, a bad encoding) a
        ClientError."""
        where = redact(self.base_url)
        if isinstance(exc, httpx.TimeoutException):
            return ClientConnectionError(f"{where} did not answer in time ({type(exc).__name__})")
        if isinstance(exc, httpx.TransportError):
            return ClientConnectionError(f"cannot reach {where}: {exc}")
        return ClientError(f"call to {where} failed: {exc}")

    @staticmethod
    def _answer(call: Call[T], response: httpx.Response) -> T:
        """``call``'s parsed data from the envelope; ClientError for a refusal."""
        if call.download and response.status_code < 400:
            return call.parse(response.text)
        try:
            body = response.json()
        except ValueError:
            body = response.text
        return call.parse(read_envelope(response.status_code, body))
