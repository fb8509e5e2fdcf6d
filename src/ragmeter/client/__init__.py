"""Python client of the ragmeter service, shaped like DB-GPT's:
``Client(api_base=..., api_key=...)``, ``AsyncClient`` and ``run_evaluation(client, request)``."""

from ragmeter.client._calls import ClientError
from ragmeter.client.aio import AsyncClient
from ragmeter.client.evaluation import run_evaluation
from ragmeter.client.sync import Client
from ragmeter.runs.request import EvaluateServeRequest

__all__ = ["AsyncClient", "Client", "ClientError", "EvaluateServeRequest", "run_evaluation"]
