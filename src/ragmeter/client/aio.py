"""``AsyncClient``: the service from async code (runs, spaces, datasets, evaluation)."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx

from ragmeter.client import _calls as calls
from ragmeter.client._base import DEFAULT_API_BASE, FINISHED, ClientBase
from ragmeter.client._calls import Call, RequestLike
from ragmeter.knowledge.models import SpaceInfo
from ragmeter.runs.compare import MetricComparison
from ragmeter.runs.store import RunInfo
from ragmeter.service.schemas import AddOut, DatasetOut, HitOut, Page, ResultItem, RunCreated

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient(ClientBase):
    """An async client: ``await client.runs.create(...)``, ``client.runs.results(id)`` as an
    async iterator, ``await run_evaluation(client, request)``."""

    def __init__(
        self,
        api_base: str = DEFAULT_API_BASE,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(api_base, api_key, timeout)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self._headers, timeout=timeout, transport=transport
        )
        self.runs = _AsyncRuns(self)
        self.spaces = _AsyncSpaces(self)

    async def send(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(
                call.method, call.path, **self._request_kwargs(call)
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return self._answer(call, response)

    async def evaluate(self, request: RequestLike) -> builtins.list[list[dict[str, Any]]]:
        return await self.send(calls.evaluation(request))

    async def upload_dataset(self, path: str | Path, name: str | None = None) -> DatasetOut:
        return await self.send(calls.upload_dataset(path, name))

    async def models(self) -> builtins.list[str]:
        return [m.name for m in await self.send(calls.models())]

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


class _AsyncRuns:
    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def create(self, request: RequestLike) -> RunCreated:
        return await self._c.send(calls.create_run(request))

    async def get(self, run_id: str) -> RunInfo:
        return await self._c.send(calls.get_run(run_id))

    async def list(
        self, offset: int = 0, limit: int = 50, state: str | None = None
    ) -> Page[RunInfo]:
        return await self._c.send(calls.list_runs(offset, limit, state))

    async def results_page(
        self, run_id: str, offset: int = 0, limit: int = 100
    ) -> Page[ResultItem]:
        return await self._c.send(calls.results_page(run_id, offset, limit))

    async def results(self, run_id: str, page_size: int = 500) -> AsyncIterator[ResultItem]:
        offset = 0
        while True:
            page = await self.results_page(run_id, offset, page_size)
            for item in page.items:
                yield item
            offset += len(page.items)
            if not page.items or offset >= page.total:
                return

    async def wait(
        self,
        run_id: str,
        on_progress: Callable[[RunInfo], None] | None = None,
        *,
        poll: float = 0.5,
    ) -> RunInfo:
        """As ``Client.runs.wait``, without blocking the loop (bound it with
        ``asyncio.timeout`` if needed)."""
        last: tuple[str, int] | None = None
        while True:
            info = await self.get(run_id)
            seen = (info.state, info.progress.get("done", 0))
            if on_progress is not None and seen != last:
                on_progress(info)
            last = seen
            if info.state in FINISHED:
                return info
            await asyncio.sleep(poll)

    async def compare(self, run_id: str, other_id: str) -> builtins.list[MetricComparison]:
        return await self._c.send(calls.compare_runs(run_id, other_id))

    async def cancel(self, run_id: str) -> RunInfo:
        return await self._c.send(calls.cancel_run(run_id))

    async def resume(self, run_id: str, *, retry_failed: bool = False) -> RunInfo:
        return await self._c.send(calls.resume_run(run_id, retry_failed))


class _AsyncSpaces:
    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def create(
        self, name: str, description: str = "", embedder: str | None = None
    ) -> SpaceInfo:
        return await self._c.send(calls.create_space(name, description, embedder))

    async def list(self, offset: int = 0, limit: int = 1000) -> builtins.list[SpaceInfo]:
        """At most ``limit`` (1 to 1,000) from ``offset``, by name."""
        return await self._c.send(calls.spaces(offset, limit))

    async def upload(
        self, space: str | int, paths: Sequence[str | Path], names: Sequence[str] | None = None
    ) -> AddOut:
        return await self._c.send(calls.upload_documents(space, paths, names))

    async def retrieve(
        self,
        space: str | int,
        query: str,
        top_k: int = 5,
        score_threshold: float | None = None,
        retriever: str = "vector",
    ) -> builtins.list[HitOut]:
        return await self._c.send(calls.retrieve(space, query, top_k, score_threshold, retriever))
