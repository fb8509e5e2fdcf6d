"""``HttpApp``: the user's own endpoint. POST ``{"query": ...}``, read the answer and the
contexts from the JSON reply by configurable keys (dotted paths such as ``data.answer``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import httpx

from ragmeter.apps.base import AppAnswer, AppError, as_answer

__all__ = ["MISSING", "HttpApp", "dig"]

MISSING = object()


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


class HttpApp:
    """An app behind an HTTP endpoint; connection errors and 5xx are retried with backoff."""

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
    ) -> None:
        self._name = name
        self.url = url
        self.query_key = query_key
        self.answer_key = answer_key
        self.contexts_key = contexts_key
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.max_retries = max_retries
        self._client: httpx.AsyncClient | None = None

    @property
    def name(self) -> str:
        return self._name

    def _ensure_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout, headers=self.headers)
        return self._client

    async def _post(self, query: str) -> httpx.Response:
        problem = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(0.25 * 2**attempt)
            try:
                response = await self._ensure_client().post(self.url, json={self.query_key: query})
            except httpx.TimeoutException:
                problem = f"no answer within {self.timeout:g}s"
                continue
            except httpx.TransportError as exc:
                problem = f"cannot reach {self.url}: {exc}"
                continue
            if response.status_code < 500:
                return response
            problem = f"{self.url} answered {response.status_code}: {response.text[:200]}"
        raise AppError(f"{problem} (after {self.max_retries + 1} attempts)")

    async def answer(self, query: str) -> AppAnswer:
        response = await self._post(query)
        if response.status_code >= 400:
            raise AppError(f"{self.url} answered {response.status_code}: {response.text[:200]}")
        try:
            data = response.json()
        except json.JSONDecodeError:
            raise AppError(f"{self.url} did not answer JSON: {response.text[:120]!r}") from None
        answer = dig(data, self.answer_key)
        if answer is MISSING:
            keys = ", ".join(data) if isinstance(data, Mapping) else type(data).__name__
            raise AppError(f"the reply has no '{self.answer_key}' (it has: {keys})")
        contexts = dig(data, self.contexts_key)
        value = {"answer": answer, "contexts": None if contexts is MISSING else contexts}
        if not isinstance(answer, str):
            raise AppError(f"'{self.answer_key}' in the reply is not a string")
        return as_answer(value, f"the reply of {self.url}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
