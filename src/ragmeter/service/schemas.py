"""The service's side of its API schemas: the paging query parameters (FastAPI bits) here, the
models themselves in ``ragmeter.wire``, shared with the client (re-exported for old imports)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from ragmeter.wire.knowledge import AddOut, HitOut
from ragmeter.wire.pages import Page
from ragmeter.wire.resources import AppOut, DatasetOut, ModelOut, PromptOut
from ragmeter.wire.runs import MetricInfo, ResultItem, RunCreated, SceneInfo

__all__ = [
    "PAGE_BYTES",
    "AddOut",
    "AppOut",
    "DatasetOut",
    "HitOut",
    "Limit",
    "MetricInfo",
    "ModelOut",
    "Offset",
    "Page",
    "PromptOut",
    "RecordId",
    "ResultItem",
    "RunCreated",
    "SceneInfo",
]

#: query parameters that page a list: where it starts, and how many items (at most 1,000)
Offset = Annotated[int, Query(ge=0, le=2**31)]
Limit = Annotated[int, Query(ge=1, le=1000)]
#: a stored record's number in a query, when given (a dataset id): SQLite holds at most a
#: signed 64-bit one
RecordId = Annotated[int | None, Query(ge=1, le=2**63 - 1)]
#: a page (of results, of dataset rows) stops once it holds about this many bytes
PAGE_BYTES = 16_000_000
