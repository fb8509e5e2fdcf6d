"""``HttpApp``: the user's own endpoint. POST ``{"query": ...}``, read the answer and the
contexts from the JSON reply by configurable keys (dotted paths such as ``data.answer``).

The reply is read as a stream and refused past ``max_reply_bytes``. Given a ``HostPolicy`` (the
service gives one), the app only connects where the policy allows and its errors never quote the
reply's body; without one (the command line) it reaches any host and quotes a little of the body
to help debugging. An endpoint that cannot be reached before any query succeeded sets the app's
``failure``: the evaluation stops and names it instead of failing every row one by one; a host
the policy refuses stops it as a setting to change (``AppRefused``), not as an outage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from ragmeter._retry import RetryPolicy, TryAgain, retry_after, retryable_status
from ragmeter.apps._hosts import HostPolicy, guarded_transport, refusal
from ragmeter.apps.base import AppAnswer, AppError, AppRefused, as_answer
from ragmeter.errors import RagmeterError, public_url

__all__ = ["DEFAULT_REPLY_BYTES", "MISSING", "HttpApp", "dig"]

MISSING = object()
#: the largest reply read by default (the service's ``[server] max_app_reply_mb``)
DEFAULT_REPLY_BYTES = 1_000_000
#: tries with no answer (refused, timed out), before any query was answered, that make an
#: endpoint unusable
_UNREACHABLE_AFTER = 2


def dig(data: Any, path: str) -> Any:
    """``data["a"]["b"][0]`` for the path ``a.b.0``; a missing step returns ``MISSING``."""
    current = data
    for step in path.split("."):
        if isinstance(current, Mapping) and step in current:
            current = current[step]
        elif (
            isinstance(current, list)
            and step.isascii()
            and step.isdigit()
            and int(step) < len(current)
        ):
            current = current[int(step)]
        else:
            return MISSING
    return current


class _Reply:
    """What came back: status, content type, the Retry-After it asked for and at most
    ``max_reply_bytes`` of the body."""

    def __init__(
        self, status: int, content_type: str, body: bytes, retry_after: float | None = None
    ) -> None:
        self.status = status
        self.content_type = content_type
        self.body = body
        self.retry_after = retry_after

    def describe(self, quote: bool) -> str:
        kind = self.content_type or "no content type"
        what = f"HTTP {self.status}, {kind}, {len(self.body)} bytes"
        if quote and self.body:
            what += f": {self.body[:200].decode('utf-8', 'replace')!r}"
        return what


class HttpApp:
    """An app behind an HTTP endpoint. A query gets ``max_retries`` more tries under the shared
    retry policy (no answer, 408, 429 and 5xx; Retry-After honoured up to its cap)."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        query_key: str = "query",
        answer_key: str = "answer",
        contexts_key: str = "contexts",
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_reply_bytes: int = DEFAULT_REPLY_BYTES,
        hosts: HostPolicy | None = None,
    ) -> None:
        self._name = name
        self.url = url
        self.query_key = query_key
        self.answer_key = answer_key
        self.contexts_key = contexts_key
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.retry = RetryPolicy(attempts=max_retries + 1)
        self.max_reply_bytes = max_reply_bytes
        self.hosts = hosts
        #: why the endpoint cannot be used at all (set once; every later query fails at once)
        self.failure: RagmeterError | None = None
        self._answered = False
        self._unreachable = 0
        self._client: httpx.AsyncClient | None = None

    @property
    def name(self) -> str:
        return self._name

    def _ensure_client(self) -> httpx.AsyncClient:
        if self._client is None:
            transport = guarded_transport(self.hosts) if self.hosts is not None else None
            self._client = httpx.AsyncClient(
                timeout=self.timeout,
                headers={"Accept-Encoding": "identity", **self.headers},
                transport=transport,
                trust_env=self.hosts is None,
            )
        return self._client

    async def _send(self, query: str) -> _Reply:
        async with self._ensure_client().stream(
            "POST", self.url, json={self.query_key: query}
        ) as response:
            body = bytearray()
            # decoded bytes are counted: a compressed reply cannot inflate past the cap (one
            # network read at a time is decoded, so memory stays bounded while it is checked)
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_reply_bytes:
                    raise AppError(
                        f"{self.where} sent a reply larger than {self.max_reply_bytes:,} bytes "
                        "(the service's [server] max_app_reply_mb)"
                    )
            content_type = response.headers.get("content-type", "").split(";")[0]
            wait = retry_after(response.headers)
            return _Reply(response.status_code, content_type, bytes(body), wait)

    @property
    def where(self) -> str:
        """The endpoint as messages show it: no credentials, no query string."""
        return public_url(self.url)

    def _give_up(self, reason: str, kind: type[RagmeterError] = AppError) -> RagmeterError:
        self.failure = kind(f"app '{self.name}' at {self.where} {reason}")
        return self.failure

    def _not_answered(self, reason: str) -> None:
        """A try got no answer (refused, timed out): before the endpoint ever answered, a few
        of those mean it cannot be used; the evaluation stops instead of waiting on every row."""
        if self._answered:
            return
        self._unreachable += 1
        if self._unreachable >= _UNREACHABLE_AFTER:
            raise self._give_up(reason)

    async def _post(self, query: str) -> _Reply:
        try:
            return await self.retry.run(lambda _attempt: self._try(query))
        except TryAgain as exc:
            raise AppError(f"{exc.reason} (after {self.retry.attempts} attempts)") from None

    async def _try(self, query: str) -> _Reply:
        """One POST: the reply (an error status too); TryAgain when the retry policy says
        another try may help; the app's ``failure`` once it cannot be used at all."""
        if self.failure is not None:
            raise self.failure
        try:
            reply = await self._send(query)
        except httpx.TimeoutException:
            self._not_answered(f"does not answer within its {self.timeout:g} s timeout")
            raise TryAgain(f"no answer within {self.timeout:g}s") from None
        except httpx.TransportError as exc:
            refused = refusal(exc)
            if refused is not None:
                raise self._give_up(f"may not be reached: {refused}", AppRefused) from None
            self._not_answered(f"is unreachable: {exc}")
            raise TryAgain(f"cannot reach {self.where}: {exc}") from None
        if reply.status < 500:
            self._answered = True
        if retryable_status(reply.status):
            problem = f"{self.where} answered {reply.describe(self.hosts is None)}"
            raise TryAgain(problem, retry_after=reply.retry_after)
        return reply

    async def answer(self, query: str) -> AppAnswer:
        reply = await self._post(query)
        quote = self.hosts is None
        if reply.status >= 400:
            raise AppError(f"{self.where} answered {reply.describe(quote)}")
        try:
            data = json.loads(reply.body)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, an integer too long
            problem = f"did not answer usable JSON ({reply.describe(quote)})"
            raise AppError(f"{self.where} {problem}") from None
        steps = {
            k: data[k]
            for k in ("messages", "tool_calls")
            if isinstance(data, Mapping) and k in data
        }
        answer = dig(data, self.answer_key)
        if answer is MISSING and "messages" in steps:  # an agent's reply: its last message
            answer = None
        elif answer is MISSING:
            found = ""
            if quote:  # a local user may see the reply's keys; the service shows nothing of it
                keys = list(data)[:20] if isinstance(data, Mapping) else [type(data).__name__]
                found = f" (it has: {', '.join(map(str, keys))})"
            raise AppError(f"the reply has no '{self.answer_key}'{found}")
        if answer is not None and not isinstance(answer, str):
            raise AppError(f"'{self.answer_key}' in the reply is not a string")
        contexts = dig(data, self.contexts_key)
        value: dict[str, Any] = {"contexts": None if contexts is MISSING else contexts, **steps}
        if answer is not None:
            value["answer"] = answer
        return as_answer(value, f"the reply of {self.where}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
