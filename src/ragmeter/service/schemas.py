"""The service's side of its API schemas: the paging query parameters (FastAPI bits) here, the
models themselves in ``ragmeter.wire``, shared with the client (re-exported for old imports)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from ragmeter.store.lookup import MAX_STORED_INT
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

#: query parameters that page a list: where it starts, and how many items (at most 1,000);
#: a page's end, compared with row numbers, stays within what the store holds
Offset = Annotated[int, Query(ge=0, le=MAX_STORED_INT - 1000)]
Limit = Annotated[int, Query(ge=1, le=1000)]
#: a stored record's number in a query, when given (a dataset id)
RecordId = Annotated[int | None, Query(ge=1, le=MAX_STORED_INT)]
#: a page (of results, of dataset rows) stops once it holds about this many bytes
PAGE_BYTES = 16_000_000
