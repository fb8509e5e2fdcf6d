"""Runs: the request that starts one, the run as the API shows it, its results row x
metric, and the scenes and metrics a run is made of."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class EvaluateServeRequest(BaseModel):
    """The request body of ``POST .../evaluation`` and ``POST .../runs``: every field is
    optional, as DB-GPT's client sends all 18 and leaves most of them null."""

    model_config = ConfigDict(extra="forbid")

    evaluate_code: str | None = Field(None, description="id for the run (default: generated)")
    scene_key: str | None = Field(None, description="recall, app or dataset")
    scene_value: str | None = Field(None, description="space (recall) or app (app): id or name")
    datasets_name: str | None = Field(None, description="a stored dataset's name or id")
    datasets: list[dict[str, Any]] | None = Field(None, description="rows, inline")
    evaluate_metrics: list[str] | None = Field(None, description="metric names or specs")
    context: dict[str, Any] | None = Field(None, description="top_k, prompt, model, ...")
    name: str | None = Field(None, description="what to call the run (not unique)")
    tags: list[str] | None = Field(None, description="tags to find the run by")
    note: str | None = Field(None, description="a note on the run")
    user_name: str | None = None
    user_id: str | None = None
    sys_code: str | None = None
    parallel_num: int | None = Field(None, description="rows evaluated at once (1-64)")
    state: str | None = None
    result: str | None = None
    storage_type: str | None = None
    average_score: str | None = None
    log_info: str | None = None
    gmt_create: str | None = None
    gmt_modified: str | None = None


RunState = Literal["pending", "running", "done", "failed", "cancelled"]


class RunInfo(BaseModel):
    """A run as the API shows it."""

    run_id: str
    #: what the user called it (``--name``); None: unnamed
    name: str | None = None
    tags: list[str] = Field(default_factory=list)
    note: str = ""
    archived: bool = False
    #: the target in a few words (``hybrid@5 on docs``)
    label: str = ""
    #: the dataset version the run evaluated: name (None: inline rows), version, hash
    dataset: dict[str, Any] = Field(default_factory=dict)
    #: what made the run (``runs.planning.lineage``); empty for runs stored before lineage was
    lineage: dict[str, Any] = Field(default_factory=dict)
    #: judged by ragmeter's scripted judge (``judge-server``): scores no model gave
    scripted_judge: bool = False
    state: RunState
    scene_key: str
    scene_value: str | None
    metrics: list[str]
    progress: dict[str, int]
    resumable: bool
    error: str | None
    #: input (fix the request), upstream (judge, embedder or app), internal, interrupted
    error_kind: str | None = None
    #: per metric: mean, count, null, ci95_low, ci95_high, ci_note (why the interval is not
    #: informative: fewer than 30 values, or all equal), small_sample, scale (``0-1``)
    summary: dict[str, dict[str, bool | float | int | str | None]] | None = None
    cost: dict[str, float]
    dataset_id: int
    created_at: datetime
    #: the user who started it (None: made before users, or by the command line)
    created_by: str | None = None
    started_at: datetime | None
    finished_at: datetime | None


class RunCreated(BaseModel):
    run_id: str
    state: str


class ResultItem(BaseModel):
    """One row x one metric: the shape of DB-GPT's ``/evaluation`` answer (``prediction`` to
    ``feedback``), with the row it belongs to, why ``score`` is null and what judging cost."""

    prediction: Any = None
    contexts: Any = None
    score: float | None = None
    passing: bool | None = None
    metric_name: str
    prediction_cost: int = 0
    query: str
    raw_dataset: dict[str, Any] = Field(default_factory=dict)
    feedback: str | None = None
    #: the reason when ``score`` is null
    error: str | None = None
    row_index: int
    cost: dict[str, Any] | None = None
    #: why ``score`` is null: upstream (judge, embedder or app failed; ``resume`` with
    #: ``retry_failed`` redoes it), input (the row's data decides it) or metric (a bug)
    error_kind: str | None = None
    #: the judge's reasoning: ``{"groups": [{"kind", "items": [{"text", "verdict", "reason",
    #: "value"}]}], "values": {...}}``; null when not recorded (an older run, or a metric
    #: with no reasoning to show)
    details: dict[str, Any] | None = None


class SceneInfo(BaseModel):
    scene_key: str
    description: str


class MetricInfo(BaseModel):
    name: str
    aliases: list[str] = Field(default_factory=list)
    description: str
    needs_judge: bool = False
