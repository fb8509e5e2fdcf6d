"""Run records in the store: created, found, listed and deleted."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import ConflictError, NotFoundError, StoreError, clip
from ragmeter.runs.config import EvaluationConfig
from ragmeter.store import DatasetRecord, RunRecord, Store
from ragmeter.store.lookup import LIKE_ESCAPE, insert_unique, like_pattern

__all__ = ["RunRecords"]


class RunRecords:
    """The runs of one store, as records."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def create(
        self,
        config: EvaluationConfig,
        metric_names: Sequence[str],
        dataset_id: int,
        total_rows: int,
        request: dict[str, Any],
        run_id: str | None = None,
    ) -> RunRecord:
        """A pending run keeping the config it runs with (and what its results call the
        metrics), over a stored dataset."""
        record = RunRecord(
            id=run_id or uuid.uuid4().hex,
            state="pending",
            scene_key=config.scene,
            scene_value=config.scene_value,
            dataset_id=dataset_id,
            spec={**config.stored(), "metric_names": list(metric_names)},
            request=request,
            total_rows=total_rows,
            done_rows=0,
            resumable=False,
            usage={},
        )
        insert_unique(self.store, record, "run", record.id, kind="id")
        return record

    def get(self, run_id: str) -> RunRecord:
        with self.store.session() as session:
            record = session.get(RunRecord, run_id)
        if record is None:
            raise NotFoundError(f"no run '{clip(run_id)}'")
        return record

    def state(self, run_id: str) -> str:
        """The run's state as stored now."""
        with self.store.session() as session:
            found = session.scalar(select(RunRecord.state).where(RunRecord.id == run_id))
        if found is None:
            raise NotFoundError(f"no run '{clip(run_id)}'")
        return str(found)

    def runs(
        self,
        offset: int = 0,
        limit: int = 50,
        state: str | None = None,
        *,
        text: str | None = None,
        dataset_id: int | None = None,
    ) -> tuple[list[RunRecord], int]:
        """Runs, newest first, and how many match: of a ``state``, over a dataset, and whose
        id, dataset name or target (scene value) holds ``text`` (case-insensitive)."""
        where: list[Any] = [RunRecord.state == state] if state else []
        if dataset_id is not None:
            where.append(RunRecord.dataset_id == dataset_id)
        if text:
            pattern = like_pattern(text)
            named = select(DatasetRecord.id).where(
                DatasetRecord.name.ilike(pattern, escape=LIKE_ESCAPE)
            )
            where.append(
                or_(
                    RunRecord.id.ilike(pattern, escape=LIKE_ESCAPE),
                    RunRecord.scene_value.ilike(pattern, escape=LIKE_ESCAPE),
                    RunRecord.dataset_id.in_(named),
                )
            )
        with self.store.session() as session:
            total = session.scalar(select(func.count()).select_from(RunRecord).where(*where)) or 0
            query = (
                select(RunRecord)
                .where(*where)
                .order_by(RunRecord.created_at.desc(), RunRecord.id)
                .offset(offset)
                .limit(limit)
            )
            return list(session.scalars(query).all()), total

    def delete_run(self, run_id: str) -> RunRecord:
        """Delete a finished, failed or cancelled run with its results; a pending or running
        one is refused (cancel it first). Its dataset stays."""
        record = self.get(run_id)
        try:
            with self.store.session() as session:
                applied = session.execute(
                    delete(RunRecord).where(
                        RunRecord.id == run_id, RunRecord.state.not_in(("pending", "running"))
                    )
                )
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot delete run '{run_id}': {exc}") from exc
        if not getattr(applied, "rowcount", 0):
            state = self.state(run_id)
            raise ConflictError(f"run '{run_id}' is {state}; cancel it before deleting it")
        return record

    def pending(self) -> list[str]:
        with self.store.session() as session:
            query = select(RunRecord.id).where(RunRecord.state == "pending")
            return list(session.scalars(query.order_by(RunRecord.created_at)))
