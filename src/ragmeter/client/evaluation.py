"""``run_evaluation(client, request)``, shaped like DB-GPT's: awaitable, returns ``data``
(per row, one result per metric) and raises ``ClientError`` with status and message."""

from __future__ import annotations

import asyncio
from typing import Any

from ragmeter.client._calls import RequestLike
from ragmeter.client.aio import AsyncClient
from ragmeter.client.sync import Client

__all__ = ["run_evaluation"]


async def run_evaluation(
    client: Client | AsyncClient, request: RequestLike
) -> list[list[dict[str, Any]]]:
    """Evaluate on the server and wait. Works with either client, so DB-GPT code
    (``data = await run_evaluation(client, request=request)``) runs unchanged; from blocking
    code, call ``client.evaluate(request)``."""
    if isinstance(client, AsyncClient):
        return await client.evaluate(request)
    return await asyncio.to_thread(client.evaluate, request)
