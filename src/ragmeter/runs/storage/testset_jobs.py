"""Test set generations in the store, so every server sharing it (replicas) shows, counts and
cancels them: the server generating one holds it by a lease it renews while it works, and
looks for a cancel asked on any server; one whose lease has passed (its server died) reads as
failed, its rows kept so far staying in its dataset."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import ConflictError, LimitError, NotFoundError, StoreError, clip
from ragmeter.runs.storage._owner import this_process
from ragmeter.store.db import Store
from ragmeter.store.locks import write_lock
from ragmeter.store.models import TestsetJobRecord, utc_now
from ragmeter.wire.testsets import TestsetJob

__all__ = ["TestsetJobStore"]

#: finished generations kept for GET (the oldest are forgotten first)
KEEP = 200
STOPPED = (
    "the server generating it stopped (its lease passed); the rows kept so far stay in its dataset"
)


#: what a generation's record keeps in columns of their own, not in ``data``
_COLUMNS = {"state", "error", "created_by"}


def _job(record: TestsetJobRecord) -> TestsetJob:
    columns = {"state": record.state, "error": record.error, "created_by": record.created_by}
    return TestsetJob.model_validate({**record.data, **columns})


class TestsetJobStore:
    """The generations of one store; ``lease_seconds``: how long a server's word holds one."""

    __test__ = False

    def __init__(self, store: Store, lease_seconds: float) -> None:
        self.store = store
        self.lease_seconds = lease_seconds

    def _lease(self) -> datetime:
        return utc_now() + timedelta(seconds=self.lease_seconds)

    def _expire(self, session: Any, job_id: str | None = None) -> None:
        """Running generations (``job_id`` alone, if given) whose lease passed end failed
        (their server is gone). Only when there is one: a read takes no write lock."""
        table = TestsetJobRecord
        passed = [table.state == "running", table.lease_until < utc_now()]
        if job_id is not None:
            passed.append(table.id == job_id)
        if session.scalar(select(table.id).where(*passed).limit(1)) is not None:
            session.execute(update(table).where(*passed).values(state="failed", error=STOPPED))

    def _check_room(self, session: Any, most: int) -> None:
        table = TestsetJobRecord
        self._expire(session)
        running = session.scalar(
            select(func.count()).select_from(table).where(table.state == "running")
        )
        if (running or 0) >= most:
            raise LimitError(
                f"{running} test set generations are running; try again when one is done",
                setting=f"[server] max_testset_jobs = {most}",
                status=429,
            )

    def check_room(self, most: int) -> None:
        """LimitError (429) when ``most`` generations run on the servers sharing the store."""
        with self.store.session() as session:
            self._check_room(session, most)
            session.commit()

    def add(self, job: TestsetJob, most: int) -> None:
        """Keep a new running generation of this process; LimitError (429) when ``most`` run
        already on the servers sharing the store."""
        table = TestsetJobRecord
        try:
            with self.store.session() as session:
                write_lock(session.connection(), "ragmeter-testsets")
                self._check_room(session, most)
                session.add(
                    table(
                        id=job.id,
                        state=job.state,
                        error=job.error,
                        data=job.model_dump(mode="json", exclude=_COLUMNS),
                        dataset_id=job.dataset_id,
                        dataset_name=job.dataset_name,
                        created_by=job.created_by,
                        owner=this_process(),
                        lease_until=self._lease(),
                    )
                )
                session.flush()
                self._forget_old(session)
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot keep test set generation '{job.id}': {exc}") from exc

    def _forget_old(self, session: Any) -> None:
        table = TestsetJobRecord
        old = (
            select(table.id)
            .where(table.state != "running")
            .order_by(table.created_at.desc())
            .offset(KEEP)
        )
        stale = list(session.scalars(old))
        if stale:
            session.execute(delete(table).where(table.id.in_(stale)))

    def _record(self, session: Any, job_id: str) -> TestsetJobRecord:
        found = session.get(TestsetJobRecord, job_id)
        if found is None:
            raise NotFoundError(f"no test set generation '{clip(job_id)}'")
        return found  # type: ignore[no-any-return]

    def get(self, job_id: str) -> TestsetJob:
        with self.store.session() as session:
            self._expire(session, job_id)
            session.commit()
            return _job(self._record(session, job_id))

    def update(self, job_id: str, **values: Any) -> None:
        """Change what the API shows of a generation of this process (its fields by name),
        renewing its lease while it runs."""
        with self.store.session() as session:
            record = self._record(session, job_id)
            job = _job(record).model_copy(update=values)
            record.data = job.model_dump(mode="json", exclude=_COLUMNS)
            record.state, record.error = job.state, job.error
            record.dataset_id, record.dataset_name = job.dataset_id, job.dataset_name
            if job.state == "running":
                record.lease_until = self._lease()
            session.commit()

    def ask_cancel(self, job_id: str) -> None:
        """Ask the server generating it to stop; ConflictError for a finished one."""
        table = TestsetJobRecord
        with self.store.session() as session:
            self._expire(session, job_id)
            record = self._record(session, job_id)
            if record.state != "running":
                session.commit()
                raise ConflictError(
                    f"test set generation '{job_id}' is {record.state}; only running ones"
                )
            session.execute(update(table).where(table.id == job_id).values(cancel_asked=True))
            session.commit()

    def cancel_asked(self, job_id: str) -> bool:
        """Renew this process's lease on a running generation; whether a cancel was asked
        (on any server)."""
        table = TestsetJobRecord
        with self.store.session() as session:
            session.execute(
                update(table)
                .where(table.id == job_id, table.state == "running", table.owner == this_process())
                .values(lease_until=self._lease())
            )
            asked = session.scalar(select(table.cancel_asked).where(table.id == job_id))
            session.commit()
            return bool(asked)

    def running_into(self, dataset_id: int, name: str | None) -> TestsetJob | None:
        """The running generation writing into the dataset ``dataset_id`` (or one named
        ``name``), if any."""
        table = TestsetJobRecord
        into = table.dataset_id == dataset_id
        if name:
            into = into | (table.dataset_name == name)
        with self.store.session() as session:
            self._expire(session)
            session.commit()
            found = session.scalars(select(table).where(table.state == "running", into)).first()
            return None if found is None else _job(found)
