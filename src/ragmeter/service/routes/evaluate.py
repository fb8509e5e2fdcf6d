"""DB-GPT's evaluation routes: ``POST /evaluation`` (waits for the scores), ``GET /scenes``,
``GET /metrics``. The run behind ``/evaluation`` is stored like any other; its id comes back
in the ``X-Ragmeter-Run-Id`` header."""

from __future__ import annotations

import asyncio
import inspect
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response

from ragmeter.metrics import LLMEvaluationMetric
from ragmeter.metrics.registry import metric_entries
from ragmeter.runs.planning.request import SCENES, EvaluateServeRequest
from ragmeter.service._runs import create_run, grouped_results
from ragmeter.service.envelope import ApiError, Result, ok
from ragmeter.service.schemas import ResultItem, SceneInfo
from ragmeter.service.state import Services, services
from ragmeter.wire.dbgpt import PageMetricInfo

__all__ = ["RUN_ID_HEADER", "router"]

RUN_ID_HEADER = "X-Ragmeter-Run-Id"
#: how a run that did not finish answers, by what failed (a cancelled run: 409)
_FAILED_STATUS = {"input": 400, "upstream": 502, "interrupted": 503, "internal": 500}
router = APIRouter(tags=["evaluation"])
Deps = Annotated[Services, Depends(services)]


@router.post("/evaluation")
async def evaluation(
    body: EvaluateServeRequest, response: Response, svc: Deps
) -> Result[list[list[ResultItem]]]:
    """Evaluate and wait: ``data`` holds, per row, one result per metric."""
    record = await create_run(svc, body)
    response.headers[RUN_ID_HEADER] = record.id
    await svc.manager.wait(record.id)  # shielded: a client that gives up leaves the run queued
    finished = await asyncio.to_thread(svc.runs.get, record.id)
    if finished.state != "done":
        raise ApiError(
            _FAILED_STATUS.get(finished.error_kind or "", 409),
            f"run_{finished.state}",
            f"run '{record.id}' {finished.state}: {finished.error or 'no reason given'}; "
            f"resume it with POST /api/v2/serve/evaluate/runs/{record.id}/resume",
            data={"run_id": record.id},
            headers={RUN_ID_HEADER: record.id},
        )
    rows = await asyncio.to_thread(grouped_results, svc, record.id)
    return ok([[ResultItem.model_validate(item) for item in row] for row in rows])


@router.get("/scenes")
def scenes() -> Result[list[SceneInfo]]:
    """The scenes ``scene_key`` may name."""
    return ok([SceneInfo(scene_key=k, description=v) for k, v in SCENES.items()])


def _needs_judge(factory: Any) -> bool:
    return inspect.isclass(factory) and issubclass(factory, LLMEvaluationMetric)


def _describe(name: str, description: str) -> str:
    """A metric's label in DB-GPT's form: its name and the first sentence of its description."""
    first = description.split(". ")[0].rstrip(".")
    return f"{name}: {first}" if first else name


@router.get("/metrics")
def metrics(
    scene_key: str | None = None, scene_value: str | None = None
) -> Result[list[PageMetricInfo]]:
    """Metrics ``evaluate_metrics`` may name (by name or alias), with what they measure
    (``describe`` labels them in DB-GPT's page). ``scene_key=recall`` lists those that need no
    judge; ``scene_value`` (the page sends it) changes nothing: every space or app takes every
    metric of its scene."""
    if scene_key is not None and scene_key not in SCENES:
        raise ApiError(400, "invalid_request", f"scene_key must be one of {', '.join(SCENES)}")
    out = [
        PageMetricInfo(
            name=entry.class_name or entry.name,
            aliases=sorted({entry.name, *entry.aliases} - {entry.class_name or entry.name}),
            description=entry.description,
            describe=_describe(entry.class_name or entry.name, entry.description),
            needs_judge=_needs_judge(entry.factory),
        )
        for entry in metric_entries()
    ]
    if scene_key == "recall":
        out = [m for m in out if not m.needs_judge]
    return ok(out)
