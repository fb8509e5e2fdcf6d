"""Response models of the service (requests reuse the library's own pydantic models)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragmeter.errors import public_url

__all__ = [
    "PAGE_BYTES",
    "AddOut",
    "AppOut",
    "CompatResult",
    "DatasetOut",
    "HitOut",
    "Limit",
    "MetricInfo",
    "ModelOut",
    "Offset",
    "Page",
    "PromptOut",
    "ResultItem",
    "RunCreated",
    "SceneInfo",
]


class CompatResult(BaseModel):
    """One row x one metric, in the shape DB-GPT's ``/evaluation`` answers (plus ``error``,
    the reason when ``score`` is null)."""

    prediction: Any = None
    contexts: Any = None
    score: float | None = None
    passing: bool | None = None
    metric_name: str
    prediction_cost: int = 0
    query: str
    raw_dataset: dict[str, Any] = Field(default_factory=dict)
    feedback: str | None = None
    error: str | None = None


class ResultItem(CompatResult):
    """A stored result: its row, and what judging it cost."""

    row_index: int
    cost: dict[str, Any] | None = None
    #: why ``score`` is null: upstream (judge, embedder or app failed; ``resume`` with
    #: ``retry_failed`` redoes it), input (the row's data decides it) or metric (a bug)
    error_kind: str | None = None


T = TypeVar("T")


#: query parameters that page a list: where it starts, and how many items (at most 1,000)
Offset = Annotated[int, Query(ge=0, le=2**31)]
Limit = Annotated[int, Query(ge=1, le=1000)]
#: a page (of results, of dataset rows) stops once it holds about this many bytes
PAGE_BYTES = 16_000_000


class Page(BaseModel, Generic[T]):
    """One page of a list, and how many items the whole list has."""

    items: list[T]
    total: int
    offset: int = 0
    limit: int = 0


class RunCreated(BaseModel):
    run_id: str
    state: str


class SceneInfo(BaseModel):
    scene_key: str
    description: str


class MetricInfo(BaseModel):
    name: str
    aliases: list[str] = Field(default_factory=list)
    description: str
    needs_judge: bool = False


class PromptOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    code: str
    kind: str
    language: str | None
    template: str
    description: str
    updated_at: datetime | None = None


class AppOut(BaseModel):
    """An app's settings as any key holder may read them: URLs without credentials or query."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    kind: str
    config: dict[str, Any]

    @field_validator("config")
    @classmethod
    def _public_urls(cls, config: dict[str, Any]) -> dict[str, Any]:
        return {
            k: public_url(v) if k in ("url", "base_url") and isinstance(v, str) else v
            for k, v in config.items()
        }


class DatasetOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str | None
    source: str
    row_count: int
    created_at: datetime | None = None


class ModelOut(BaseModel):
    name: str


class HitOut(BaseModel):
    chunk_id: int
    score: float
    document: str
    content: str
    meta: dict[str, Any] = Field(default_factory=dict)


class AddOut(BaseModel):
    added: list[str]
    updated: list[str]
    unchanged: list[str]
    failed: list[tuple[str, str]]
    empty: list[str]
    chunks: int
    seconds: float
