"""Response models of the service (requests reuse the library's own pydantic models)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

__all__ = [
    "CompatResult",
    "MetricInfo",
    "Page",
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


T = TypeVar("T")


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
