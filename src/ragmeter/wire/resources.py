"""Prompts, apps, datasets and models as the API lists them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from ragmeter.errors import public_url


class PromptOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    code: str
    kind: str
    language: str | None
    template: str
    description: str
    #: editing a prompt makes its next version; a run keeps the one it used (CODE@V)
    version: int = 1
    updated_at: datetime | None = None
    #: the user who made it (None: made before users, or by the command line)
    created_by: str | None = None


class AppOut(BaseModel):
    """An app's settings as any key holder may read them: URLs without credentials or query."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    kind: str
    config: dict[str, Any]
    #: editing an app makes its next version; a run keeps the one it used (NAME@V)
    version: int = 1
    #: the user who made it (None: made before users, or by the command line)
    created_by: str | None = None

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
    #: 1, 2, ...: a name's rows changed; ``NAME@VERSION`` names one
    version: int = 1
    #: hash of the rows (None: not computed yet)
    content_hash: str | None = None
    source: str
    row_count: int
    created_at: datetime | None = None
    #: the user who made this version (None: made before users, or by the command line)
    created_by: str | None = None
    #: an upload whose rows a version held already: that version, no new one
    reused: bool = False
    #: in a list: how many versions the name has and runs used them
    versions: int | None = None
    runs: int | None = None


class TrecDatasetOut(DatasetOut):
    """A dataset made from TREC qrels and a run: one row per evaluated query."""

    #: the run's id (its last line's RUNID)
    runid: str
    #: queries of the run with no judgements in the qrels: not evaluated
    unjudged_queries: int
    #: judged queries the run lacks: skipped, or with ``complete`` rows with no results
    missing_queries: int
    #: which queries were left out, in words (None when none was)
    note: str | None = None


class ModelOut(BaseModel):
    name: str
