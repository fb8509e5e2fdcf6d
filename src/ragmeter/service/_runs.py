"""Creating a run from a request (checked before it is stored) and reading its results."""

from __future__ import annotations

import asyncio
from typing import Any

from ragmeter.errors import ConfigError, ConflictError, NotFoundError
from ragmeter.runs.plan import build_plan
from ragmeter.runs.request import EvaluateServeRequest, RunSpec, spec_from_request
from ragmeter.service.state import Services
from ragmeter.store import RunRecord

__all__ = ["create_run", "grouped_results", "result_dict"]

#: request fields kept with the run as given (rows are kept as a dataset)
_NOT_KEPT = {"datasets"}


def _rows(
    svc: Services, body: EvaluateServeRequest
) -> tuple[list[dict[str, Any]], int | None, str]:
    """The rows to evaluate: inline ``datasets``, else the stored ``datasets_name``."""
    if body.datasets is not None:
        if body.datasets_name:
            raise ConfigError("give datasets (rows) or datasets_name (a stored dataset), not both")
        return body.datasets, None, "datasets"
    if body.datasets_name:
        record = svc.runs.dataset(body.datasets_name)
        return list(record.rows), record.id, f"dataset '{record.name}'"
    raise ConfigError("datasets (rows) or datasets_name (a stored dataset) is required")


def _check(svc: Services, body: EvaluateServeRequest) -> tuple[RunSpec, int, int]:
    """(spec with metric names, dataset id, row count); raises naming what is wrong."""
    spec = spec_from_request(body)
    if body.evaluate_code is not None:
        try:
            svc.runs.get(body.evaluate_code)
        except NotFoundError:
            pass
        else:
            raise ConflictError(f"run '{body.evaluate_code}' already exists; choose another id")
    rows, dataset_id, source = _rows(svc, body)
    plan = build_plan(spec, rows, svc.kb, source=source)
    spec = spec.model_copy(update={"metric_names": [m.metric_name for m in plan.metrics]})
    if dataset_id is None:
        dataset_id = svc.runs.add_dataset(rows, source="request").id
    return spec, dataset_id, len(plan.rows)


async def create_run(svc: Services, body: EvaluateServeRequest) -> RunRecord:
    """Check the request, store the run and queue it."""
    spec, dataset_id, total = await asyncio.to_thread(_check, svc, body)
    kept = body.model_dump(exclude_none=True, exclude=_NOT_KEPT)
    record = await asyncio.to_thread(
        svc.runs.create, spec, dataset_id, total, kept, body.evaluate_code
    )
    svc.manager.submit(record.id)
    return record


def result_dict(row: Any) -> dict[str, Any]:
    return {
        "row_index": row.row_index,
        "metric_name": row.metric_name,
        "score": row.score,
        "passing": row.passing,
        "feedback": row.feedback,
        "error": row.error,
        "error_kind": row.error_kind,
        "prediction": row.prediction,
        "contexts": row.contexts,
        "prediction_cost": row.prediction_cost,
        "query": row.query,
        "raw_dataset": row.raw_dataset,
        "cost": row.cost,
    }


def grouped_results(svc: Services, run_id: str) -> list[list[dict[str, Any]]]:
    """All of a run's results, one list per row in row order."""
    found, _total = svc.runs.results(run_id, 0, 1_000_000_000)
    out: list[list[dict[str, Any]]] = []
    last = None
    for row in found:
        if row.row_index != last:
            out.append([])
            last = row.row_index
        out[-1].append(result_dict(row))
    return out
