"""Python client of the ragmeter service, shaped like DB-GPT's:
``Client(api_base=..., api_key=...)``, ``AsyncClient`` and ``run_evaluation(client, request)``.
It loads only httpx, pydantic and ``ragmeter.wire``: none of the server or the engine."""

from ragmeter.client._errors import (
    ClientAuthError,
    ClientConflictError,
    ClientConnectionError,
    ClientError,
    ClientNotFoundError,
)
from ragmeter.client.aio import AsyncClient
from ragmeter.client.evaluation import run_evaluation
from ragmeter.client.sync import Client
from ragmeter.wire.runs import EvaluateServeRequest

__all__ = [
    "AsyncClient",
    "Client",
    "ClientAuthError",
    "ClientConflictError",
    "ClientConnectionError",
    "ClientError",
    "ClientNotFoundError",
    "EvaluateServeRequest",
    "run_evaluation",
]
