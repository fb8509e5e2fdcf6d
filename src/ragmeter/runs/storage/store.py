"""Runs in the store and their lifecycle. Every state change is one conditional UPDATE on the
state(s) it expects (so a cancel is never overwritten by a worker finishing). ``RunStore``
is made of its parts: the datasets (``runs.storage.dataset_store``), the run records
(``runs.storage.run_records``) and their results (``runs.storage.result_store``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import SQLAlchemyError

from ragmeter._public import public_text
from ragmeter.errors import ConflictError, StoreError
from ragmeter.runs.storage._owner import alive, this_process
from ragmeter.runs.storage.dataset_store import DatasetStore
from ragmeter.runs.storage.result_store import ResultStore, forget_upstream_failures
from ragmeter.store.models import RunRecord, utc_now
from ragmeter.wire.runs import RunState

__all__ = ["RunState", "RunStore", "add_usage", "metric_names"]

INTERRUPTED = (
    "interrupted: the process running it stopped (a server shut down, a command killed); resume it"
)


def add_usage(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """Two usage dicts summed key by key."""
    return {k: round(float(a.get(k, 0)) + float(b.get(k, 0)), 3) for k in {*a, *b}}


def _mine() -> Any:
    """SQL: the run is this process's (or nobody's yet)."""
    return or_(RunRecord.owner.is_(None), RunRecord.owner == this_process())


class RunStore(DatasetStore, ResultStore):
    """Datasets, runs and results of one store. With ``lease_seconds`` (a server's) a run it
    starts is held by a lease it renews while it works (``renew``); runs whose lease passed
    are another server's to take over (``take_over``), never marked interrupted by a list."""

    def __init__(self, store: Any, *, lease_seconds: float | None = None) -> None:
        super().__init__(store)
        self.lease_seconds = lease_seconds

    def _lease(self) -> datetime | None:
        if self.lease_seconds is None:
            return None
        return utc_now() + timedelta(seconds=self.lease_seconds)

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
            lease_until=self._lease(),
            resumable=False,
            started_at=func.coalesce(RunRecord.started_at, utc_now()),
        )

    def renew(self, run_id: str) -> bool:
        """Hold a running run of this process for another lease; False once it is no longer
        running here (finished, cancelled, or taken over by another server)."""
        return self._set(
            run_id,
            RunRecord.state == "running",
            RunRecord.owner == this_process(),
            lease_until=self._lease(),
        )

    def take_over(self) -> list[str]:
        """Running runs whose lease has passed (their server died or hangs) become pending
        runs of this process, each by one conditional UPDATE so two servers never take the
        same; which ones, for this server to execute (only their missing rows)."""
        if self.lease_seconds is None:
            return []
        now = utc_now()
        passed = (RunRecord.state == "running", RunRecord.lease_until < now)
        with self.store.session() as session:
            found = session.scalars(select(RunRecord.id).where(*passed)).all()
        return [
            run_id
            for run_id in found
            if self._set(
                run_id, *passed, state="pending", owner=this_process(), lease_until=self._lease()
            )
        ]

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
            _mine(),
            state=state,
            error=None if error is None else public_text(error),
            error_kind=kind,
            resumable=_rows_left(),
            finished_at=utc_now(),
        )

    def request_cancel(self, run_id: str) -> RunRecord:
        """Cancel a pending or running run; ConflictError for a finished one."""
        applied = self._set(
            run_id,
            RunRecord.state.in_(("pending", "running")),
            state="cancelled",
            resumable=_rows_left(),
            finished_at=utc_now(),
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
                    forget_upstream_failures(session, run_id)
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
            finished_at=utc_now(),
        )

    def runs(self, *args: Any, **kwargs: Any) -> tuple[list[RunRecord], int]:
        """``RunRecords.runs``, after marking the runs whose process died as interrupted, so
        a list never shows a dead run as running."""
        self.reap()
        return super().runs(*args, **kwargs)

    def _unleased(self) -> tuple[Any, ...]:
        """SQL conditions of what a dead process's run is for this store: in a server, only
        a run without a lease (a command's); a leased run is taken over when it passes."""
        return () if self.lease_seconds is None else (RunRecord.lease_until.is_(None),)

    def reap(self, run_id: str | None = None) -> list[str]:
        """Runs (or the one ``run_id``) left ``running`` by another process of this machine
        that is gone become failed, interrupted and resumable; which ones. A killed
        ``ragmeter eval`` leaves such a run."""
        me = this_process()
        where = [RunRecord.state == "running", *self._unleased()]
        if run_id is not None:
            where.append(RunRecord.id == run_id)
        with self.store.session() as session:
            found = session.execute(select(RunRecord.id, RunRecord.owner).where(*where)).all()
        ids = [i for i, owner in found if owner != me and not alive(owner)]
        for i in ids:
            self.interrupt(i)
        return ids

    def mark_interrupted(self) -> list[str]:
        """Runs left ``running`` by a process of this machine that is gone become failed and
        resumable (a server's start-up, ``ragmeter runs resume``). Runs of live processes, and
        of other machines sharing the store, are left alone: a replica on another machine
        takes those over when their lease passes."""
        with self.store.session() as session:
            found = session.execute(
                select(RunRecord.id, RunRecord.owner).where(RunRecord.state == "running")
            ).all()
        ids = [run_id for run_id, owner in found if not alive(owner)]
        for run_id in ids:
            self.interrupt(run_id)
        return ids


def metric_names(record: RunRecord) -> list[str]:
    """What a run's results call its metrics, in order."""
    return list(record.spec.get("metric_names") or record.spec.get("metrics", []))


def _rows_left() -> Any:
    """SQL: the run has rows left to evaluate (what makes a stopped run resumable)."""
    return RunRecord.done_rows < RunRecord.total_rows
