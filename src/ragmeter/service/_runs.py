"""Creating a run from a request (checked before it is stored) and reading its results."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import Any

from ragmeter.config import ServerConfig
from ragmeter.datasets import DatasetLimits
from ragmeter.datasets.row import MAX_DEPTH, nesting_depth
from ragmeter.embeddings import is_local_embedder
from ragmeter.errors import ConfigError, ConflictError, LimitError, NotFoundError
from ragmeter.runs.planning.config import EvaluationConfig, SpaceTargetConfig
from ragmeter.runs.planning.lineage import RunLabels, make_lineage
from ragmeter.runs.planning.plan import build_plan
from ragmeter.runs.planning.request import EvaluateServeRequest, config_from_request
from ragmeter.service.state import Services
from ragmeter.store.models import RunRecord

__all__ = ["create_run", "grouped_results", "readable", "result_dict"]

#: request fields kept with the run as given (rows are kept as a dataset)
_NOT_KEPT = {"datasets", "name", "tags", "note"}


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
        source = f"dataset '{record.name}'"
        limit = svc.settings.server.max_rows
        if record.row_count > limit:  # refused before a row is read
            raise LimitError(
                f"{source} holds {record.row_count} rows; a run takes at most {limit}",
                setting="[server] max_rows",
                status=413,
            )
        return list(svc.runs.iter_dataset_rows(record.id)), record.id, source
    raise ConfigError("datasets (rows) or datasets_name (a stored dataset) is required")


def _check_counts(server: ServerConfig, body: EvaluateServeRequest) -> None:
    """Counts a request controls, checked before any work depends on them."""
    metrics = len(body.evaluate_metrics or [])
    if metrics > server.max_metrics:
        raise LimitError(
            f"evaluate_metrics names {metrics} metrics; a run takes at most {server.max_metrics}",
            setting="[server] max_metrics",
        )
    rows = len(body.datasets or [])
    if rows > server.max_rows:
        raise LimitError(
            f"datasets holds {rows} rows; a run takes at most {server.max_rows}",
            setting="[server] max_rows",
            status=413,
        )
    if body.parallel_num is not None and body.parallel_num > server.max_parallel:
        raise LimitError(
            f"parallel_num {body.parallel_num} is more than this server runs at once",
            setting=f"[server] max_parallel = {server.max_parallel}",
        )


def _check_depth(server: ServerConfig, where: str, k: object) -> None:
    """A retrieval depth (``context.top_k``, a metric's ``@k`` or ``top_k``) within the cap."""
    if isinstance(k, int) and k > server.max_top_k:
        raise LimitError(
            f"{where} asks for the top {k}; this server retrieves at most {server.max_top_k}",
            setting="[server] max_top_k",
        )


def _check_models(svc: Services, config: EvaluationConfig) -> None:
    policy = svc.app_policy
    if config.judge is not None:
        policy.check_model(config.judge.model, "context.model")
    embedder = config.embedder.model
    if embedder is not None and not is_local_embedder(embedder):
        policy.check_model(embedder, "context.embedding_model")


@dataclass(frozen=True)
class _Checked:
    """A run request that passed every check, ready to be stored."""

    config: EvaluationConfig
    names: list[str]
    dataset_id: int
    total: int
    labels: RunLabels
    lineage: dict[str, Any]


def _check(svc: Services, body: EvaluateServeRequest) -> _Checked:
    """The run the request asks for; raises naming what is wrong."""
    server = svc.settings.server
    _check_counts(server, body)
    labels = RunLabels(name=body.name, tags=tuple(body.tags or ()), note=body.note or "")
    config = config_from_request(body)
    if len(config.metrics) > server.max_metrics:  # trec_eval's forms name several each
        raise LimitError(
            f"evaluate_metrics names {len(config.metrics)} metrics once trec_eval's forms are "
            f"read (all_trec, P.5,10, ...); a run takes at most {server.max_metrics}",
            setting="[server] max_metrics",
        )
    _check_depth(server, "context.top_k", config.top_k)
    if isinstance(config.target, SpaceTargetConfig):
        _check_depth(server, "context.top_k", config.target.top_k)
    _check_models(svc, config)
    if body.evaluate_code is not None:
        try:
            svc.runs.get(body.evaluate_code)
        except NotFoundError:
            pass
        else:
            raise ConflictError(f"run '{body.evaluate_code}' already exists; choose another id")
    rows, dataset_id, source = _rows(svc, body)
    if len(rows) > server.max_rows:
        raise LimitError(
            f"{source} holds {len(rows)} rows; a run takes at most {server.max_rows}",
            setting="[server] max_rows",
            status=413,
        )
    limits = DatasetLimits.from_server(server)
    plan = build_plan(config, rows, svc.kb, source=source, policy=svc.app_policy, limits=limits)
    for metric in plan.metrics:  # built, not yet run: a metric allocates nothing before
        _check_depth(server, f"metric '{metric.metric_name}'", getattr(metric, "top_k", None))
    names = [m.metric_name for m in plan.metrics]
    if dataset_id is None:
        dataset = svc.runs.keep_dataset(rows, name=None, source="request")[0]
    else:
        dataset = svc.runs.dataset(dataset_id)
    lineage = make_lineage(plan, dataset, code=None)
    return _Checked(config, names, dataset.id, len(plan.rows), labels, lineage)


async def create_run(svc: Services, body: EvaluateServeRequest) -> RunRecord:
    """Check the request, store the run and queue it."""
    run = await asyncio.to_thread(_check, svc, body)
    kept = body.model_dump(exclude_none=True, exclude=_NOT_KEPT)
    record = await asyncio.to_thread(
        partial(svc.runs.create, labels=run.labels, lineage=run.lineage),
        run.config, run.names, run.dataset_id, run.total, kept, body.evaluate_code,
    )  # fmt: skip
    svc.manager.submit(record.id)
    return record


def readable(value: Any) -> Any:
    """``value`` as stored, or a note in its place when it nests deeper than any input may
    now (a record stored before depths were limited would otherwise fail every read)."""
    if nesting_depth(value, MAX_DEPTH) <= MAX_DEPTH:
        return value
    note = f"nested deeper than {MAX_DEPTH} levels; not shown"
    if isinstance(value, dict):
        return {"not_shown": note}
    return [note] if isinstance(value, list) else note


def result_dict(row: Any) -> dict[str, Any]:
    return {
        "row_index": row.row_index,
        "metric_name": row.metric_name,
        "score": row.score,
        "passing": row.passing,
        "feedback": row.feedback,
        "error": row.error,
        "error_kind": row.error_kind,
        "prediction": readable(row.prediction),
        "contexts": readable(row.contexts),
        "prediction_cost": row.prediction_cost,
        "query": row.query,
        "raw_dataset": readable(row.raw_dataset),
        "cost": row.cost,
        "details": readable(row.details),
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
