"""Runs, their datasets and results in the store. Every state change is one conditional UPDATE
on the state(s) it expects (so a cancel is never overwritten by a worker finishing), and a
row's results are written together with the progress counter, so a killed process leaves
either all of a row or none of it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from ragmeter._public import public_text
from ragmeter.errors import ConflictError, NotFoundError, StoreError, clip
from ragmeter.metrics.retrieval import NO_RELEVANT_REASON
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.reports.report import json_default
from ragmeter.reports.stats import bootstrap_mean_ci
from ragmeter.runs._owner import alive, this_process
from ragmeter.runs.config import EvaluationConfig
from ragmeter.store import DatasetRecord, DatasetRowRecord, ResultRow, RunRecord, Store
from ragmeter.store.db import to_json
from ragmeter.store.lookup import (
    LIKE_ESCAPE,
    by_name_or_id,
    insert_unique,
    is_id,
    like_pattern,
)
from ragmeter.store.pairing import row_keys
from ragmeter.wire import RunInfo, RunState

__all__ = ["RunInfo", "RunState", "RunStore", "add_usage"]

INTERRUPTED = "interrupted: the server stopped while this run was running; resume it"


#: dataset rows written per INSERT (executemany)
_ROW_BATCH = 2000


def add_usage(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """Two usage dicts summed key by key."""
    return {k: round(float(a.get(k, 0)) + float(b.get(k, 0)), 3) for k in {*a, *b}}


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _summary(scores: dict[str, list[float | None]]) -> dict[str, dict[str, float | int | None]]:
    out: dict[str, dict[str, float | int | None]] = {}
    for name, values in scores.items():
        present = np.asarray([s for s in values if s is not None], dtype=np.float64)
        entry: dict[str, float | int | None] = {
            "mean": None,
            "count": len(present),
            "null": len(values) - len(present),
            "ci95_low": None,
            "ci95_high": None,
        }
        if len(present):
            low, high = bootstrap_mean_ci(present)
            entry.update(mean=float(present.mean()), ci95_low=low, ci95_high=high)
        out[name] = entry
    return out


def _until(texts: Iterable[str], max_bytes: int | None, read: Callable[[str], Any]) -> list[Any]:
    """``read`` of each text, stopping after the one that takes the total past ``max_bytes``."""
    out: list[Any] = []
    size = 0
    for text in texts:
        out.append(read(text))
        size += len(text)
        if max_bytes is not None and size > max_bytes:
            break
    return out


def _insert_rows(session: Session, dataset_id: int, rows: Iterable[dict[str, Any]]) -> int:
    """Write ``rows`` at positions 0, 1, ... with one executemany per ``_ROW_BATCH`` rows (a
    Core INSERT: the ORM's bulk path costs twice as much per row); how many."""
    connection = session.connection()
    statement = insert(DatasetRowRecord)  # run on the connection: plain Core
    count = 0
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append({"dataset_id": dataset_id, "position": count, "data": to_json(row)})
        count += 1
        if len(batch) == _ROW_BATCH:
            connection.execute(statement, batch)
            batch = []
    if batch:
        connection.execute(statement, batch)
    return count


def _rows_between(dataset_id: int, start: int, stop: int) -> Any:
    """SQL: the JSON texts of a dataset's rows ``start`` to ``stop`` (excluded), in order."""
    return (
        select(DatasetRowRecord.data)
        .where(
            DatasetRowRecord.dataset_id == dataset_id,
            DatasetRowRecord.position >= start,
            DatasetRowRecord.position < stop,
        )
        .order_by(DatasetRowRecord.position)
    )


def _each_row(store: Store, dataset_id: int, batch: int) -> Iterator[dict[str, Any]]:
    start = 0
    while True:
        with store.session() as session:
            texts = list(session.scalars(_rows_between(dataset_id, start, start + batch)))
        yield from map(json.loads, texts)
        if len(texts) < batch:
            return
        start += batch


class RunStore:
    """Datasets, runs and results of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._summaries: dict[tuple[str, int], dict[str, dict[str, float | int | None]]] = {}

    # -- datasets ---------------------------------------------------------------------------

    def add_dataset(
        self, rows: Iterable[dict[str, Any]], *, name: str | None = None, source: str = ""
    ) -> DatasetRecord:
        """Keep rows (canonical dicts, read once: a generator will do), one per row, written
        in batches in one transaction; a named dataset's name must be free."""
        record = DatasetRecord(name=name, source=source, row_count=0)
        key = name or "(unnamed)"
        try:
            with self.store.session() as session:
                session.add(record)
                session.flush()  # the id, and the name taken or not, before any row
                record.row_count = _insert_rows(session, record.id, rows)
                session.commit()
        except IntegrityError:
            raise ConflictError(f"dataset '{key}' already exists; choose another name") from None
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store dataset '{key}': {exc}") from exc
        return record

    def append_dataset_rows(self, dataset_id: int, rows: Sequence[dict[str, Any]]) -> int:
        """Add ``rows`` after a dataset's last row, in one transaction (a generator keeping
        rows as they pass); the dataset's new row count."""
        try:
            with self.store.session() as session:
                record = session.get(DatasetRecord, dataset_id)
                if record is None:
                    raise NotFoundError(f"no dataset {dataset_id}")
                start = record.row_count
                session.connection().execute(
                    insert(DatasetRowRecord),
                    [
                        {"dataset_id": dataset_id, "position": start + i, "data": to_json(row)}
                        for i, row in enumerate(rows)
                    ],
                )
                record.row_count = start + len(rows)
                session.commit()
                return record.row_count
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot add rows to dataset {dataset_id}: {exc}") from exc

    def dataset(self, key: str | int) -> DatasetRecord:
        """A dataset by name or id (its rows stay in the store: ``dataset_rows``,
        ``iter_dataset_rows``)."""
        with self.store.session() as session:
            record = by_name_or_id(
                session, DatasetRecord, key, what="dataset", hint="upload one first"
            )
            if record.name is None and not is_id(str(key)):
                raise NotFoundError(f"no dataset '{clip(str(key))}'")
            return record

    def dataset_rows(
        self, key: str | int, offset: int, limit: int, max_bytes: int | None = None
    ) -> list[dict[str, Any]]:
        """Rows ``offset`` to ``offset + limit`` of a dataset, stopping once they pass
        ``max_bytes`` of JSON: one range of the primary key, no other row is read."""
        record = self.dataset(key)
        query = _rows_between(record.id, offset, offset + limit)
        with self.store.session() as session:
            texts = session.scalars(query.execution_options(yield_per=8))
            return _until(texts, max_bytes, json.loads)

    def iter_dataset_rows(self, key: str | int, batch: int = 2000) -> Iterator[dict[str, Any]]:
        """Every row of a dataset in order, read ``batch`` rows at a time (each batch one
        short query, so no read stays open while the caller works on the rows). An unknown
        dataset fails here, not at the first row."""
        return _each_row(self.store, self.dataset(key).id, batch)

    def datasets(self, offset: int = 0, limit: int = 50) -> tuple[list[DatasetRecord], int]:
        """Named datasets, newest first, and how many there are; their rows are not read."""
        named = DatasetRecord.name.is_not(None)
        with self.store.session() as session:
            total = session.scalar(select(func.count()).where(named)) or 0
            query = (
                select(DatasetRecord)
                .where(named)
                .order_by(DatasetRecord.id.desc())
                .offset(offset)
                .limit(limit)
            )
            return list(session.scalars(query).all()), total

    def delete_dataset(self, key: str | int) -> DatasetRecord:
        """Forget a named dataset: its name is freed at once; its rows go too unless a run
        still uses them (then they stay, unnamed, for that run's results and resume)."""
        record = self.dataset(key)
        try:
            with self.store.session() as session:
                used = session.scalar(select(func.count()).where(RunRecord.dataset_id == record.id))
                this = DatasetRecord.id == record.id
                if used:
                    session.execute(update(DatasetRecord).where(this).values(name=None))
                else:
                    session.execute(delete(DatasetRecord).where(this))
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot delete dataset '{record.name}': {exc}") from exc
        return record

    # -- runs -------------------------------------------------------------------------------

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

    def info(self, record: RunRecord, *, summary: bool = True) -> RunInfo:
        return RunInfo(
            run_id=record.id,
            state=record.state,
            scene_key=record.scene_key,
            scene_value=record.scene_value,
            metrics=list(record.spec.get("metric_names") or record.spec.get("metrics", [])),
            progress={"done": record.done_rows, "total": record.total_rows},
            resumable=record.resumable,
            error=record.error,
            error_kind=record.error_kind,
            summary=self.summary(record) if summary else None,
            cost=dict(record.usage or {}),
            dataset_id=record.dataset_id,
            created_at=record.created_at,
            started_at=record.started_at,
            finished_at=record.finished_at,
        )

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

    def _set(self, run_id: str, *conditions: Any, **values: Any) -> bool:
        """One conditional UPDATE; whether it applied (the run was in the expected state)."""
        try:
            with self.store.session() as session:
                result = session.execute(
                    update(RunRecord).where(RunRecord.id == run_id, *conditions).values(**values)
                )
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot update run '{run_id}': {exc}") from exc
        return bool(getattr(result, "rowcount", 0))

    def start(self, run_id: str) -> bool:
        """pending -> running; False if the run is no longer pending (cancelled meanwhile)."""
        return self._set(
            run_id,
            RunRecord.state == "pending",
            state="running",
            error=None,
            error_kind=None,
            owner=this_process(),
            resumable=False,
            started_at=func.coalesce(RunRecord.started_at, _now()),
        )

    def finish(
        self, run_id: str, state: RunState, error: str | None = None, kind: str | None = None
    ) -> bool:
        """running -> done, failed or cancelled; False (nothing written) if the run is no longer
        running (cancelled or interrupted meanwhile). Unfinished rows make it resumable.
        ``kind`` says what failed: input (the request), upstream (judge, embedder, app),
        internal. ``error`` is kept as the API may show it (``public_text``)."""
        return self._set(
            run_id,
            RunRecord.state == "running",
            state=state,
            error=None if error is None else public_text(error),
            error_kind=kind,
            resumable=_rows_left(),
            finished_at=_now(),
        )

    def request_cancel(self, run_id: str) -> RunRecord:
        """Cancel a pending or running run; ConflictError for a finished one."""
        applied = self._set(
            run_id,
            RunRecord.state.in_(("pending", "running")),
            state="cancelled",
            resumable=_rows_left(),
            finished_at=_now(),
        )
        record = self.get(run_id)
        if not applied:
            raise ConflictError(f"run '{run_id}' is {record.state}; only pending or running runs")
        return record

    def reopen(self, run_id: str, *, retry_failed: bool = False) -> RunRecord:
        """A failed or cancelled run with rows left -> pending again, in one transaction.
        ``retry_failed`` first forgets the rows holding an upstream null (a judge, embedder or
        app that failed), so they are evaluated again, keeping every other row; then even a
        done run can be reopened."""
        record = self.get(run_id)
        if record.state in ("pending", "running"):
            raise ConflictError(f"run '{run_id}' is already {record.state}")
        try:
            with self.store.session() as session:
                if retry_failed:
                    _forget_upstream_failures(session, run_id)
                applied = session.execute(
                    update(RunRecord)
                    .where(
                        RunRecord.id == run_id,
                        RunRecord.state == record.state,
                        RunRecord.done_rows < RunRecord.total_rows,
                    )
                    .values(state="pending", finished_at=None)
                )
                if getattr(applied, "rowcount", 0):
                    session.commit()
                    return self.get(run_id)
                session.rollback()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot reopen run '{run_id}': {exc}") from exc
        now = self.get(run_id)
        if now.state != record.state:  # another caller moved it meanwhile
            raise ConflictError(f"run '{run_id}' is {now.state} now; try again")
        hint = "" if retry_failed else " (retry_failed=true redoes rows a judge or app failed)"
        raise ConflictError(f"run '{run_id}' has no rows left to evaluate{hint}")

    def interrupt(self, run_id: str) -> bool:
        """A run stopped by a server going down (not by a user): pending or running -> failed
        and resumable; a run cancelled or finished meanwhile is left as it is."""
        return self._set(
            run_id,
            RunRecord.state.in_(("pending", "running")),
            state="failed",
            error=INTERRUPTED,
            error_kind="interrupted",
            resumable=True,
            finished_at=_now(),
        )

    def mark_interrupted(self) -> list[str]:
        """Runs left ``running`` by a process of this machine that is gone become failed and
        resumable (a server's start-up, ``ragmeter runs resume``). Runs of live processes, and
        of other machines sharing the store, are left alone."""
        with self.store.session() as session:
            found = session.execute(
                select(RunRecord.id, RunRecord.owner).where(RunRecord.state == "running")
            ).all()
        ids = [run_id for run_id, owner in found if not alive(owner)]
        for run_id in ids:
            self.interrupt(run_id)
        return ids

    def pending(self) -> list[str]:
        with self.store.session() as session:
            query = select(RunRecord.id).where(RunRecord.state == "pending")
            return list(session.scalars(query.order_by(RunRecord.created_at)))

    # -- results ----------------------------------------------------------------------------

    def finished_rows(self, run_id: str) -> set[int]:
        with self.store.session() as session:
            query = select(ResultRow.row_index).where(ResultRow.run_id == run_id).distinct()
            return set(session.scalars(query))

    def commit_rows(
        self, run_id: str, records: Sequence[ResultRecord], usage: dict[str, float]
    ) -> str:
        """Write finished rows' results and advance the run's counter, in one transaction;
        the run's state after it (a run no longer running has its ``resumable`` updated)."""
        rows = len({r.row_index for r in records})
        values = [_result_row(run_id, r) for r in records]
        left = RunRecord.done_rows + rows < RunRecord.total_rows
        try:
            with self.store.session() as session:
                session.add_all(values)
                session.execute(
                    update(RunRecord)
                    .where(RunRecord.id == run_id)
                    .values(
                        done_rows=RunRecord.done_rows + rows,
                        usage=usage,
                        resumable=and_(RunRecord.state != "running", left),
                    )
                )
                state = session.scalar(select(RunRecord.state).where(RunRecord.id == run_id))
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store results of run '{run_id}': {exc}") from exc
        return str(state)

    def state(self, run_id: str) -> str:
        """The run's state as stored now."""
        with self.store.session() as session:
            found = session.scalar(select(RunRecord.state).where(RunRecord.id == run_id))
        if found is None:
            raise NotFoundError(f"no run '{clip(run_id)}'")
        return str(found)

    def results(
        self, run_id: str, offset: int = 0, limit: int = 100, max_bytes: int | None = None
    ) -> tuple[list[Any], int]:
        """Results in row then metric order, and how many the run has. With ``max_bytes`` the
        list stops once its texts and rows pass that size, read a few results at a time."""
        self.get(run_id)
        where = ResultRow.run_id == run_id
        with self.store.session() as session:
            total = session.scalar(select(func.count()).select_from(ResultRow).where(where)) or 0
            query = (
                select(ResultRow)
                .where(where)
                .order_by(ResultRow.row_index, ResultRow.id)
                .offset(offset)
                .limit(limit)
            )
            if max_bytes is None:
                return list(session.scalars(query).all()), total
            found: list[Any] = []
            size = 0
            for row in session.scalars(query.execution_options(yield_per=8)):
                found.append(row)
                texts = [row.prediction, row.contexts, row.raw_dataset, row.details]
                size += len(json.dumps(texts))
                if size > max_bytes:
                    break
            return found, total

    def report(self, run_id: str) -> EvaluationReport:
        """The run's stored results as a report (scores, summary, ``to_jsonl``)."""
        record = self.get(run_id)
        found, _total = self.results(run_id, 0, 1_000_000_000)
        records = [ResultRecord.from_attributes(r) for r in found]
        names = list(record.spec.get("metric_names") or record.spec.get("metrics", []))
        seconds = 0.0
        if record.started_at is not None and record.finished_at is not None:
            seconds = (record.finished_at - record.started_at).total_seconds()
        return EvaluationReport(records, names, record.done_rows, seconds, dict(record.usage))

    def summary(self, record: RunRecord) -> dict[str, dict[str, float | int | None]]:
        """Per metric: mean, count, nulls and a 95% bootstrap CI over the rows done so far."""
        key = (record.id, record.done_rows)
        cached = self._summaries.get(key)
        if cached is not None:
            return cached
        metrics = list(record.spec.get("metric_names") or record.spec.get("metrics", []))
        with self.store.session() as session:
            found = session.execute(
                select(ResultRow.metric_name, ResultRow.score)
                .where(ResultRow.run_id == record.id)
                .order_by(ResultRow.row_index)
            ).all()
        scores: dict[str, list[float | None]] = {name: [] for name in metrics}
        for name, score in found:
            scores.setdefault(name, []).append(score)
        out = _summary(scores)
        if len(self._summaries) > 256:
            self._summaries.clear()
        self._summaries[key] = out
        return out


def _rows_left() -> Any:
    """SQL: the run has rows left to evaluate (what makes a stopped run resumable)."""
    return RunRecord.done_rows < RunRecord.total_rows


def _upstream_null() -> Any:
    """SQL: a result whose null score an upstream failure caused. Results stored before
    kinds were (NULL kind) count as upstream unless they hold the no-relevant-item reason."""
    return and_(
        ResultRow.score.is_(None),
        or_(
            ResultRow.error_kind == "upstream",
            and_(
                ResultRow.error_kind.is_(None),
                or_(ResultRow.error.is_(None), ResultRow.error != NO_RELEVANT_REASON),
            ),
        ),
    )


def _forget_upstream_failures(session: Session, run_id: str) -> None:
    """Delete every result of the rows holding an upstream null and recount ``done_rows``
    from the rows left (in the caller's transaction)."""
    failed = (
        select(ResultRow.row_index)
        .where(ResultRow.run_id == run_id, _upstream_null())
        .distinct()
        .scalar_subquery()
    )
    session.execute(
        delete(ResultRow).where(ResultRow.run_id == run_id, ResultRow.row_index.in_(failed))
    )
    done = (
        select(func.count(func.distinct(ResultRow.row_index)))
        .where(ResultRow.run_id == run_id)
        .scalar_subquery()
    )
    session.execute(update(RunRecord).where(RunRecord.id == run_id).values(done_rows=done))


def _plain(value: Any) -> Any:
    """JSON-safe copy (numpy scalars and arrays become numbers and lists)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=json_default))


def _result_row(run_id: str, r: ResultRecord) -> ResultRow:
    id_key, query_key = row_keys(r.query, r.raw_dataset)
    return ResultRow(
        run_id=run_id,
        row_index=r.row_index,
        metric_name=r.metric_name,
        score=None if r.score is None else float(r.score),
        passing=None if r.passing is None else bool(r.passing),
        feedback=r.feedback,
        error=None if r.error is None else public_text(r.error),
        error_kind=r.error_kind,
        prediction=_plain(r.prediction),
        contexts=_plain(r.contexts),
        prediction_cost=int(r.prediction_cost or 0),
        query=r.query,
        raw_dataset=_plain(r.raw_dataset),
        cost=_plain(r.cost),
        details=None if r.details is None else _plain(r.details),
        id_key=id_key,
        query_key=query_key,
    )
