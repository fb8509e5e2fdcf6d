"""Run records in the store: created, found, listed and deleted."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import ConflictError, NotFoundError, StoreError, clip
from ragmeter.runs.planning.config import EvaluationConfig
from ragmeter.runs.planning.lineage import RunLabels, check_tags
from ragmeter.store.db import Store
from ragmeter.store.lookup import insert_unique
from ragmeter.store.models import DatasetRecord, RunRecord, RunTag
from ragmeter.store.search import LIKE_ESCAPE, like_pattern

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
        *,
        labels: RunLabels | None = None,
        lineage: dict[str, Any] | None = None,
        began: datetime | None = None,
    ) -> RunRecord:
        """A pending run keeping the config it runs with (and what its results call the
        metrics), over a stored dataset, with its name, tags and note and what made it.
        ``began``: when its rows began to be scored, for a run made while they were (its
        start then keeps that time)."""
        labels = labels or RunLabels()
        record = RunRecord(
            id=run_id or uuid.uuid4().hex,
            name=labels.name,
            note=labels.note,
            archived=False,
            lineage=lineage or {},
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
            started_at=began,
        )
        insert_unique(self.store, record, "run", record.id, kind="id")
        if labels.tags:
            self.set_tags(record.id, labels.tags)
        return record

    def tags(self, run_ids: Sequence[str]) -> dict[str, list[str]]:
        """Each run's tags, sorted (a run without any is left out)."""
        if not run_ids:
            return {}
        with self.store.session() as session:
            found = session.execute(
                select(RunTag.run_id, RunTag.tag)
                .where(RunTag.run_id.in_(list(run_ids)))
                .order_by(RunTag.run_id, RunTag.tag)
            ).all()
        out: dict[str, list[str]] = {}
        for run_id, tag in found:
            out.setdefault(run_id, []).append(tag)
        return out

    def set_tags(
        self, run_id: str, add: Sequence[str] = (), remove: Sequence[str] = ()
    ) -> list[str]:
        """Add and remove tags of a run, in one transaction; its tags after."""
        added, removed = check_tags(list(add)), check_tags(list(remove))
        self.get(run_id)
        try:
            with self.store.session() as session:
                have = set(session.scalars(select(RunTag.tag).where(RunTag.run_id == run_id)))
                new = [t for t in added if t not in have]
                if new:
                    session.execute(insert(RunTag), [{"run_id": run_id, "tag": t} for t in new])
                if removed:
                    session.execute(
                        delete(RunTag).where(RunTag.run_id == run_id, RunTag.tag.in_(removed))
                    )
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot tag run '{run_id}': {exc}") from exc
        return self.tags([run_id]).get(run_id, [])

    def relabel(
        self,
        run_id: str,
        *,
        name: str | None = None,
        note: str | None = None,
        archived: bool | None = None,
    ) -> RunRecord:
        """Rename a run, change its note or (un)archive it; what is None stays."""
        checked = RunLabels(name=name, note=note or "")
        values: dict[str, Any] = {}
        if name is not None:
            values["name"] = checked.name
        if note is not None:
            values["note"] = checked.note
        if archived is not None:
            values["archived"] = archived
        self.get(run_id)
        if values:
            try:
                with self.store.session() as session:
                    session.execute(
                        update(RunRecord).where(RunRecord.id == run_id).values(**values)
                    )
                    session.commit()
            except SQLAlchemyError as exc:
                raise StoreError(f"cannot change run '{run_id}': {exc}") from exc
        return self.get(run_id)

    def get(self, run_id: str) -> RunRecord:
        with self.store.session() as session:
            record = session.get(RunRecord, run_id)
        if record is None:
            raise NotFoundError(f"no run '{clip(run_id)}'")
        return record

    def find(self, key: str) -> RunRecord:
        """A run by its id, its name (the newest run of that name) or the start of its id
        (at least 6 characters, one run only): what a person types."""
        text = key.strip()
        with self.store.session() as session:
            record = session.get(RunRecord, text)
            if record is not None:
                return record
            named = select(RunRecord).where(RunRecord.name == text)
            record = session.scalars(named.order_by(RunRecord.created_at.desc())).first()
            if record is not None:
                return record
            if len(text) >= 6 and text.isalnum():
                query = select(RunRecord).where(RunRecord.id.startswith(text)).limit(2)
                found = list(session.scalars(query))
                if len(found) == 1:
                    return found[0]
                if found:
                    raise NotFoundError(f"'{clip(text)}' starts several runs' ids; give more of it")
        raise NotFoundError(f"no run '{clip(text)}' (an id, a name or the start of an id)")

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
        tags: Sequence[str] = (),
        archived: bool | None = False,
    ) -> tuple[list[RunRecord], int]:
        """Runs, newest first, and how many match: of a ``state``, over a dataset, holding
        every one of ``tags``, archived or not (None: both), and whose id, name, dataset
        name or target (scene value) holds ``text`` (case-insensitive)."""
        where: list[Any] = [RunRecord.state == state] if state else []
        if archived is not None:
            where.append(RunRecord.archived == archived)
        if dataset_id is not None:
            where.append(RunRecord.dataset_id == dataset_id)
        for tag in tags:
            where.append(RunRecord.id.in_(select(RunTag.run_id).where(RunTag.tag == tag)))
        if text:
            pattern = like_pattern(text)
            named = select(DatasetRecord.id).where(
                DatasetRecord.name.ilike(pattern, escape=LIKE_ESCAPE)
            )
            where.append(
                or_(
                    RunRecord.id.ilike(pattern, escape=LIKE_ESCAPE),
                    RunRecord.name.ilike(pattern, escape=LIKE_ESCAPE),
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
