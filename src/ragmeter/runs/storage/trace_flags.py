"""Reviewers' flags on production traces in the store: one flag per trace and user (a new one
replaces it), a label from ``FLAG_LABELS`` and an optional note. A trace's flags go with it
when retention deletes it (``TraceStore.purge``); the trace list filters by them
(``TraceFilter.flagged``, ``TraceFilter.flag``), so flagged traces become a dataset version."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from ragmeter.errors import ConfigError, NotFoundError, StoreError, clip
from ragmeter.runs.storage._trace_rows import chunks
from ragmeter.store.db import Store
from ragmeter.store.flag_models import TraceFlagRow
from ragmeter.store.models import utc_now
from ragmeter.store.trace_models import TraceRow
from ragmeter.wire.traces import FLAG_LABELS, MAX_FLAG_NOTE

__all__ = ["FLAG_LABELS", "MAX_FLAG_NOTE", "TraceFlag", "TraceFlagStore"]

#: ids in one IN list
_IN_LIST = 500


@dataclass(frozen=True)
class TraceFlag:
    """One user's flag on one trace."""

    trace_id: str
    user: str
    label: str
    note: str | None = None
    created_at: datetime | None = None


class TraceFlagStore:
    """The flags on the traces of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def put(self, trace_id: str, user: str, label: str, note: str | None = None) -> TraceFlag:
        """Keep ``user``'s flag on the trace (replacing theirs): NotFoundError for a trace not
        kept, ConfigError for a label not in ``FLAG_LABELS`` or a note past ``MAX_FLAG_NOTE``
        characters."""
        flag = TraceFlag(trace_id, user, label, note or None, utc_now())
        _check(flag)
        try:
            try:
                return self._put(flag)
            except IntegrityError:  # the same user's flag kept at once: theirs is replaced
                return self._put(flag)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot flag trace '{clip(trace_id)}': {exc}") from exc

    def _put(self, flag: TraceFlag) -> TraceFlag:
        table = TraceFlagRow
        with self.store.session() as session:
            if session.get(TraceRow, flag.trace_id) is None:
                raise NotFoundError(f"no trace '{clip(flag.trace_id)}'")
            mine = (table.trace_id == flag.trace_id, table.user_name == flag.user)
            session.execute(delete(table).where(*mine))
            session.add(
                TraceFlagRow(
                    trace_id=flag.trace_id,
                    user_name=flag.user,
                    label=flag.label,
                    note=flag.note,
                    created_at=flag.created_at,
                )
            )
            session.commit()
        return flag

    def remove(self, trace_id: str, user: str) -> bool:
        """Forget ``user``'s flag on the trace; whether there was one. NotFoundError for a
        trace not kept."""
        table = TraceFlagRow
        try:
            with self.store.session() as session:
                if session.get(TraceRow, trace_id) is None:
                    raise NotFoundError(f"no trace '{clip(trace_id)}'")
                done = session.execute(
                    delete(table).where(table.trace_id == trace_id, table.user_name == user)
                )
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot unflag trace '{clip(trace_id)}': {exc}") from exc
        return bool(getattr(done, "rowcount", 0))

    def of_trace(self, trace_id: str) -> list[TraceFlag]:
        """The trace's flags, oldest first."""
        return list(self.of_traces([trace_id]).get(trace_id, ()))

    def of_traces(self, trace_ids: Sequence[str]) -> dict[str, tuple[TraceFlag, ...]]:
        """The flags of each of ``trace_ids`` that has any, oldest first."""
        table = TraceFlagRow
        found: dict[str, list[TraceFlag]] = {}
        with self.store.session() as session:
            for some in chunks(list(dict.fromkeys(trace_ids)), _IN_LIST):
                query = (
                    select(table)
                    .where(table.trace_id.in_(some))
                    .order_by(table.created_at, table.id)
                )
                for row in session.scalars(query):
                    found.setdefault(row.trace_id, []).append(
                        TraceFlag(row.trace_id, row.user_name, row.label, row.note, row.created_at)
                    )
        return {key: tuple(value) for key, value in found.items()}


def _check(flag: TraceFlag) -> None:
    if flag.label not in FLAG_LABELS:
        known = ", ".join(FLAG_LABELS)
        raise ConfigError(f"label: '{clip(flag.label)}' is no flag label; one of {known}")
    if flag.note is not None and len(flag.note) > MAX_FLAG_NOTE:
        raise ConfigError(
            f"note: {len(flag.note)} characters; a flag's note holds at most {MAX_FLAG_NOTE}"
        )
