"""A stored run as the API shows it (``RunInfo``): its record, tags, lineage and summary read
from the store and put together for the command line, the service and the report. The store
half (``runs.storage.store``) answers store records; this is where they become what people see."""

from __future__ import annotations

from typing import Any

from ragmeter.errors import NotFoundError
from ragmeter.runs.storage.store import RunStore, metric_names
from ragmeter.store.models import RunRecord
from ragmeter.wire.runs import RunInfo

__all__ = ["dataset_text", "run_info", "run_infos"]


def run_info(
    runs: RunStore, record: RunRecord, *, summary: bool = True, tags: list[str] | None = None
) -> RunInfo:
    """The run as the API shows it (``tags``: already read, for a list of runs)."""
    lineage = dict(record.lineage or {})
    return RunInfo(
        run_id=record.id,
        name=record.name,
        tags=runs.tags([record.id]).get(record.id, []) if tags is None else tags,
        note=record.note or "",
        archived=bool(record.archived),
        label=str(lineage.get("label") or _old_label(record)),
        dataset=dict(lineage.get("dataset") or _old_dataset(runs, record.dataset_id)),
        lineage=lineage,
        scripted_judge=float((record.usage or {}).get("scripted", 0)) > 0,
        state=record.state,
        scene_key=record.scene_key,
        scene_value=record.scene_value,
        metrics=metric_names(record),
        progress={"done": record.done_rows, "total": record.total_rows},
        resumable=record.resumable,
        error=record.error,
        error_kind=record.error_kind,
        summary=runs.summary(record) if summary else None,
        cost=dict(record.usage or {}),
        dataset_id=record.dataset_id,
        created_at=record.created_at,
        created_by=record.created_by,
        started_at=record.started_at,
        finished_at=record.finished_at,
    )


def _old_dataset(runs: RunStore, dataset_id: int) -> dict[str, Any]:
    """The dataset of a run stored before lineage was, as lineage says it (a file's
    name, never its folder)."""
    from ragmeter.reports.html import shared_name
    from ragmeter.runs.planning.lineage import SHORT_HASH

    try:
        found = runs.dataset(dataset_id)
    except NotFoundError:
        return {"id": dataset_id}
    return {
        "id": dataset_id,
        "name": found.name,
        "version": found.version,
        "hash": (found.content_hash or "")[:SHORT_HASH],
        "source": shared_name(found.source),
    }


def run_infos(runs: RunStore, records: list[RunRecord], *, summary: bool = True) -> list[RunInfo]:
    """``info`` of each record, their tags read in one query."""
    tags = runs.tags([r.id for r in records])
    return [run_info(runs, r, summary=summary, tags=tags.get(r.id, [])) for r in records]


def _old_label(record: RunRecord) -> str:
    """The target of a run stored before lineage was, in a few words."""
    from ragmeter.runs.planning.config import EvaluationConfig
    from ragmeter.runs.planning.lineage import label

    try:
        return label(EvaluationConfig.from_stored(record.spec))
    except (ValueError, TypeError):  # a spec this version cannot read: say what is known
        return f"{record.scene_key}: {record.scene_value or ''}".strip(": ")


def dataset_text(dataset: dict[str, Any], *, short: bool = False) -> str:
    """A run's dataset version as others may see it: ``qa@2 · qa.jsonl · 3fa2b1c9d0e4``
    (``short``: ``qa@2``; ``inline rows`` for a request's rows); never a folder."""
    if not dataset:
        return ""
    name = dataset.get("name")
    head = f"{name}@{dataset.get('version', 1)}" if name else "inline rows"
    if "version" not in dataset:
        head = name or f"dataset {dataset.get('id', '')}".strip()
    if short:
        return head
    parts = [head, str(dataset.get("source") or ""), str(dataset.get("hash") or "")]
    return " · ".join(p for p in dict.fromkeys(parts) if p)
