"""What made a run, as the API shows it: what changed between two runs (their lineage and
their datasets' rows), and a change of a run's name, tags, note or archived flag."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DatasetDiff", "LineageChange", "RunChanges", "RunUpdate"]


class LineageChange(BaseModel):
    """One fact of the lineage that differs: ``key`` is its dotted path (``target.top_k``)."""

    key: str
    a: Any = None
    b: Any = None


class DatasetDiff(BaseModel):
    """How the second run's dataset version differs from the first's, row by row."""

    paired_by: Literal["id", "query"]
    added: int
    removed: int
    changed: int
    unchanged: int


class RunChanges(BaseModel):
    """What differs between two runs, shown before their numbers: the lineage facts, and
    the rows when they evaluated different dataset versions (None: the same version)."""

    changes: list[LineageChange]
    rows: DatasetDiff | None = None


class RunUpdate(BaseModel):
    """``PATCH /runs/{id}``: what to change (a field left out stays)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200)
    note: str | None = Field(None, max_length=4000)
    archived: bool | None = None
    add_tags: list[str] = Field(default_factory=list, max_length=20)
    remove_tags: list[str] = Field(default_factory=list, max_length=20)
