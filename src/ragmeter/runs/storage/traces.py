"""Production traces in the store: spans as they arrive (each kept once), each trace summed
up again from all its spans (``ragmeter.traces.conventions.trace_of``), the scores online
rules give them, the monitor's reads of a metric over time, retention, and traces saved as a
version of a dataset."""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np
from sqlalchemy import delete, func, select, tuple_
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ragmeter.datasets.row import row_from_mapping
from ragmeter.errors import DatasetError, LimitError, NotFoundError, StoreError
from ragmeter.runs.storage._trace_rows import (
    SPAN_COLUMNS,
    TraceFilter,
    chunks,
    filter_clauses,
    score_of,
    span_of,
    span_values,
    trace_of_row,
    tree_order,
)
from ragmeter.runs.storage.dataset_store import DatasetStore
from ragmeter.store.db import Store, insert_plain, plain_rows
from ragmeter.store.flag_models import TraceFlagRow
from ragmeter.store.locks import write_lock
from ragmeter.store.models import DatasetRecord, utc_now
from ragmeter.store.trace_models import SpanRow, TraceRow, TraceScoreRow
from ragmeter.traces.records import SpanRecord, TraceRecord, TraceScore

__all__ = ["ScoreSeries", "StoredTrace", "TraceDetail", "TraceFilter", "TraceStore"]

log = logging.getLogger(__name__)

#: ids in one IN list
_IN_LIST = 500
#: traces deleted per transaction by ``purge``
_PURGE_BATCH = 1000
#: the lock writers of traces take turns through (``seq`` grows in commit order)
_LOCK = "ragmeter-traces"


def summarise(spans: Sequence[SpanRecord]) -> TraceRecord:
    """The trace ``spans`` (all of one trace) sum up to: the conventions' mapping."""
    from ragmeter.traces.conventions import trace_of

    return trace_of(spans)


@dataclass(frozen=True)
class StoredTrace:
    """A stored trace: its record, its scores and when it changed (``seq``: the cursor)."""

    record: TraceRecord
    seq: int
    received_at: datetime | None
    updated_at: datetime | None
    scores: tuple[TraceScore, ...] = ()


@dataclass(frozen=True)
class TraceDetail:
    """A trace with its spans in tree order (``(depth, span)``) and its scores."""

    trace: StoredTrace
    spans: tuple[tuple[int, SpanRecord], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ScoreSeries:
    """One metric's scores over time: Unix epoch nanoseconds and scores (NaN: a null score,
    scored with a reason), in time order."""

    times: np.ndarray
    scores: np.ndarray


class TraceStore:
    """The traces of one store, each of at most ``max_spans_per_trace`` spans (``[online]
    max_spans_per_trace``: every span added sums its trace up again from all of them)."""

    def __init__(
        self, store: Store, max_spans_per_trace: int = 10_000, max_read_scores: int = 1_000_000
    ) -> None:
        self.store = store
        self.max_spans_per_trace = max_spans_per_trace
        #: ``[online] max_monitor_scores``: scores ``read_scores`` gives at once
        self.max_read_scores = max_read_scores

    def add_spans(self, spans: Sequence[SpanRecord]) -> int:
        """Keep ``spans`` (a span already kept, by trace and span id, is ignored; so is one
        past ``max_spans_per_trace``, logged) and sum up every trace they touch again from all
        its kept spans, in one transaction; how many spans were kept."""
        if not spans:
            return 0
        try:
            with self.store.session() as session:
                write_lock(session.connection(), _LOCK)
                added = self._add(session, spans)
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store {len(spans)} spans: {exc}") from exc
        return added

    def _add(self, session: Session, spans: Sequence[SpanRecord]) -> int:
        by_trace: dict[str, dict[str, SpanRecord]] = {}
        for span in spans:
            by_trace.setdefault(span.trace_id, {}).setdefault(span.span_id, span)
        ids = sorted(by_trace)
        kept: dict[str, list[SpanRecord]] = {}
        for some in chunks(ids, _IN_LIST):
            for row in session.scalars(select(SpanRow).where(SpanRow.trace_id.in_(some))):
                kept.setdefault(row.trace_id, []).append(span_of(row))
        new: list[SpanRecord] = []
        for trace_id, arrived in by_trace.items():
            old = {s.span_id for s in kept.get(trace_id, ())}
            fresh = [s for s in arrived.values() if s.span_id not in old]
            fresh.sort(key=lambda s: s.parent_id is not None and not s.remote_parent)  # roots first
            room = max(self.max_spans_per_trace - len(old), 0)
            if len(fresh) > room:
                log.warning(
                    "trace %s: %d spans left out, past [online] max_spans_per_trace (%d)",
                    trace_id, len(fresh) - room, self.max_spans_per_trace,
                )  # fmt: skip
            new.extend(fresh[:room])
        touched = sorted({s.trace_id for s in new})
        if not touched:
            return 0
        for span in new:
            kept.setdefault(span.trace_id, []).append(span)
        self._put_traces(session, [summarise(kept[t]) for t in touched])
        insert_plain(session, SpanRow, SPAN_COLUMNS, [span_values(s) for s in new])
        return len(new)

    @staticmethod
    def _put_traces(session: Session, records: Sequence[TraceRecord]) -> None:
        """Insert or update the rows of ``records``, each given the next ``seq``: past the
        largest kept and past the clock in microseconds, so a sequence never goes back when
        retention deleted the traces holding the largest ones (a rule's cursor would pass
        over the traces given them again)."""
        kept = session.scalar(select(func.coalesce(func.max(TraceRow.seq), 0))) or 0
        seq = max(kept, time.time_ns() // 1000)
        ids = [r.trace_id for r in records]
        existing: dict[str, TraceRow] = {}
        for some in chunks(ids, _IN_LIST):
            query = select(TraceRow).where(TraceRow.trace_id.in_(some))
            existing.update({row.trace_id: row for row in session.scalars(query)})
        now = utc_now()
        for record in records:
            seq += 1
            row = existing.get(record.trace_id)
            if row is None:
                row = TraceRow(trace_id=record.trace_id, received_at=now)
                session.add(row)
            text = record.row.get("query")
            row.service = _clip(record.service, 200)
            row.name = record.name[:500]
            row.start_ns, row.end_ns = record.start_ns, record.end_ns
            row.status, row.complete = record.status[:8], record.complete
            row.row = record.row
            row.query = text if isinstance(text, str) else None
            row.model = _clip(record.model, 300)
            row.input_tokens, row.output_tokens = record.input_tokens, record.output_tokens
            row.session_id = _clip(record.session_id, 200)
            row.user_id = _clip(record.user_id, 200)
            row.span_count = record.span_count
            row.updated_at = now
            row.seq = seq
        session.flush()

    def list(
        self, filters: TraceFilter | None = None, *, offset: int = 0, limit: int = 50
    ) -> tuple[list[StoredTrace], int]:
        """A page of the traces ``filters`` takes, newest first, with their scores; and how
        many it takes in all."""
        clauses = filter_clauses(filters or TraceFilter())
        with self.store.session() as session:
            total = session.scalar(select(func.count()).select_from(TraceRow).where(*clauses))
            query = (
                select(TraceRow)
                .where(*clauses)
                .order_by(TraceRow.start_ns.desc(), TraceRow.trace_id)
                .offset(offset)
                .limit(limit)
            )
            rows = list(session.scalars(query))
            scores = self._scores_of(session, [r.trace_id for r in rows])
        return [_stored(r, scores.get(r.trace_id, ())) for r in rows], int(total or 0)

    def changed_after(self, seq: int, limit: int = 500) -> builtins.list[StoredTrace]:
        """Traces changed after cursor ``seq`` (new ones, or new spans), in ``seq`` order:
        what online rules read next."""
        with self.store.session() as session:
            query = select(TraceRow).where(TraceRow.seq > seq).order_by(TraceRow.seq).limit(limit)
            return [_stored(r) for r in session.scalars(query)]

    @staticmethod
    def _scores_of(session: Session, ids: Sequence[str]) -> dict[str, tuple[TraceScore, ...]]:
        found: dict[str, list[TraceScore]] = {}
        for some in chunks(ids, _IN_LIST):
            query = (
                select(TraceScoreRow)
                .where(TraceScoreRow.trace_id.in_(some))
                .order_by(TraceScoreRow.metric, TraceScoreRow.rule)
            )
            for row in session.scalars(query):
                found.setdefault(row.trace_id, []).append(score_of(row))
        return {k: tuple(v) for k, v in found.items()}

    def get(self, trace_id: str) -> TraceDetail:
        """A trace, its spans in tree order and its scores; NotFoundError if not kept."""
        with self.store.session() as session:
            row = session.get(TraceRow, trace_id)
            if row is None:
                raise NotFoundError(f"no trace '{trace_id[:40]}'")
            spans = [span_of(s) for s in session.scalars(_spans_of(trace_id))]
            scores = self._scores_of(session, [trace_id]).get(trace_id, ())
        return TraceDetail(_stored(row, scores), tuple(tree_order(spans)))

    def spans(self, trace_id: str) -> builtins.list[SpanRecord]:
        """A trace's kept spans by start time (none for an unknown trace)."""
        with self.store.session() as session:
            return [span_of(s) for s in session.scalars(_spans_of(trace_id))]

    def span_counts(self, trace_ids: Sequence[str]) -> dict[str, int]:
        """How many spans each of ``trace_ids`` keeps (a trace not kept: left out)."""
        found: dict[str, int] = {}
        with self.store.session() as session:
            for some in chunks(list(trace_ids), _IN_LIST):
                query = select(TraceRow.trace_id, TraceRow.span_count)
                rows = session.execute(query.where(TraceRow.trace_id.in_(some)))
                found.update((trace_id, count) for trace_id, count in rows)
        return found

    def spans_of(self, trace_ids: Sequence[str]) -> dict[str, builtins.list[SpanRecord]]:
        """The kept spans of each of ``trace_ids`` by start time, in one read per 500 ids
        (online rules read a batch's spans at once)."""
        found: dict[str, builtins.list[SpanRecord]] = {}
        with self.store.session() as session:
            for some in chunks(list(trace_ids), _IN_LIST):
                query = select(SpanRow).where(SpanRow.trace_id.in_(some)).order_by(SpanRow.start_ns)
                for row in session.scalars(query):
                    found.setdefault(row.trace_id, []).append(span_of(row))
        return found

    def put_scores(self, scores: Sequence[TraceScore]) -> int:
        """Keep ``scores``, each replacing the score of its trace, metric and rule; a score
        of a trace no longer kept (deleted by retention meanwhile) is dropped. How many were
        kept."""
        latest = {(s.trace_id, s.metric, s.rule or ""): s for s in scores}
        if not latest:
            return 0
        table = TraceScoreRow
        try:
            with self.store.session() as session:
                ids = sorted({key[0] for key in latest})
                known: set[str] = set()
                for some in chunks(ids, _IN_LIST):
                    query = select(TraceRow.trace_id).where(TraceRow.trace_id.in_(some))
                    known.update(session.scalars(query))
                keys = [key for key in latest if key[0] in known]
                for some in chunks(keys, _IN_LIST):
                    columns = tuple_(table.trace_id, table.metric, table.rule)
                    session.execute(delete(table).where(columns.in_(list(some))))
                session.add_all(_score_row(latest[key]) for key in keys)
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store {len(latest)} trace scores: {exc}") from exc
        return len(keys)

    def scores(
        self,
        metric: str,
        *,
        since_ns: int | None = None,
        until_ns: int | None = None,
        by: Literal["scored", "start"] = "scored",
        rule: str | None = None,
        filters: TraceFilter | None = None,
    ) -> ScoreSeries:
        """``metric``'s scores in a time range, by when they were scored or when their trace
        started (``by``), of one rule's or any, of the traces ``filters`` takes."""
        table = TraceScoreRow
        when = table.scored_ns if by == "scored" else TraceRow.start_ns
        query = (
            select(when, table.score)
            .join(TraceRow, TraceRow.trace_id == table.trace_id)
            .where(table.metric == metric, *filter_clauses(filters or TraceFilter()))
            .order_by(when)
        )
        if since_ns is not None:
            query = query.where(when >= since_ns)
        if until_ns is not None:
            query = query.where(when < until_ns)
        if rule is not None:
            query = query.where(table.rule == rule)
        with self.store.session() as session:
            rows = plain_rows(session, query)
        times = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        values = np.fromiter(
            (np.nan if r[1] is None else r[1] for r in rows), dtype=np.float64, count=len(rows)
        )
        return ScoreSeries(times, values)

    def read_scores(self, metric: str, since_ns: int, until_ns: int) -> tuple[Any, Any]:
        """Monitors' and alert rules' reader (``runs.monitor.alerts.ScoreReader``): one score
        of ``metric`` per trace that started in ``[since_ns, until_ns)``, by that time. Of
        several rules scoring the metric on a trace, the latest score counts (a null only
        when the trace has no other: a rule's budget skip hides no other rule's score)."""
        table = TraceScoreRow
        latest = (
            func.row_number()
            .over(
                partition_by=table.trace_id,
                order_by=(table.score.is_(None), table.scored_ns.desc(), table.id.desc()),
            )
            .label("latest")
        )
        ranked = (
            select(TraceRow.start_ns.label("at"), table.score.label("score"), latest)
            .join(TraceRow, TraceRow.trace_id == table.trace_id)
            .where(
                table.metric == metric,
                TraceRow.start_ns >= since_ns,
                TraceRow.start_ns < until_ns,
            )
            .subquery()
        )
        query = select(ranked.c.at, ranked.c.score).where(ranked.c.latest == 1)
        cap = self.max_read_scores
        with self.store.session() as session:
            rows = plain_rows(session, query.order_by(ranked.c.at).limit(cap + 1))
        if len(rows) > cap:
            raise LimitError(
                f"more than {cap} scores of {metric} in the range asked; ask a shorter range",
                setting="[online] max_monitor_scores",
                status=413,
            )
        times = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        values = np.fromiter(
            (np.nan if r[1] is None else r[1] for r in rows), dtype=np.float64, count=len(rows)
        )
        return times, values

    def purge(self, keep_days: float, *, now_ns: int | None = None) -> int:
        """Delete traces (with their spans, scores and flags) that started more than
        ``keep_days`` days before now (``[online] keep_days``), a batch per transaction; how
        many."""
        now_ns = time.time_ns() if now_ns is None else now_ns
        cutoff = now_ns - int(keep_days * 86_400 * 1e9)
        deleted = 0
        try:
            while True:
                with self.store.session() as session:
                    old = select(TraceRow.trace_id).where(TraceRow.start_ns < cutoff)
                    ids = list(session.scalars(old.limit(_PURGE_BATCH)))
                    if not ids:
                        return deleted
                    for table in (TraceFlagRow, TraceScoreRow, SpanRow, TraceRow):
                        session.execute(delete(table).where(table.trace_id.in_(ids)))
                    session.commit()
                deleted += len(ids)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot delete old traces: {exc}") from exc

    def to_dataset(
        self,
        datasets: DatasetStore,
        name: str,
        *,
        trace_ids: Sequence[str] | None = None,
        filters: TraceFilter | None = None,
        limit: int = 10_000,
    ) -> tuple[DatasetRecord, bool, int]:
        """Keep the rows of the traces named (``trace_ids``) or taken by ``filters`` (at most
        ``limit``, oldest first) as dataset ``name``'s next version (or the version holding
        the same rows), each row's metadata carrying its ``trace_id``: the version, whether
        it is new, and how many rows. A trace whose row is no dataset row (no query yet) is
        refused, naming it."""
        records = self._pick(trace_ids, filters, limit)
        if not records:
            raise NotFoundError("no trace to save: none of those is kept")
        rows = [_dataset_row(record, index) for index, record in enumerate(records)]
        record, new = datasets.keep_dataset(rows, name=name, source="traces")
        return record, new, len(rows)

    def _pick(
        self, trace_ids: Sequence[str] | None, filters: TraceFilter | None, limit: int
    ) -> builtins.list[TraceRecord]:
        with self.store.session() as session:
            if trace_ids is not None:
                wanted = list(dict.fromkeys(trace_ids))[:limit]
                found: dict[str, TraceRecord] = {}
                for some in chunks(wanted, _IN_LIST):
                    query = select(TraceRow).where(TraceRow.trace_id.in_(some))
                    found.update({r.trace_id: trace_of_row(r) for r in session.scalars(query)})
                missing = [t for t in wanted if t not in found]
                if missing:
                    raise NotFoundError(f"no trace '{missing[0][:40]}' ({len(missing)} missing)")
                return [found[t] for t in wanted]
            query = (
                select(TraceRow)
                .where(*filter_clauses(filters or TraceFilter()))
                .order_by(TraceRow.start_ns, TraceRow.trace_id)
                .limit(limit)
            )
            return [trace_of_row(r) for r in session.scalars(query)]


def _clip(text: str | None, length: int) -> str | None:
    """``text`` cut to its column's length (an exporter's names are not bounded)."""
    return None if text is None else text[:length]


def _spans_of(trace_id: str) -> Any:
    return select(SpanRow).where(SpanRow.trace_id == trace_id).order_by(SpanRow.start_ns)


def _stored(row: TraceRow, scores: tuple[TraceScore, ...] = ()) -> StoredTrace:
    return StoredTrace(trace_of_row(row), row.seq, row.received_at, row.updated_at, scores)


def _score_row(score: TraceScore) -> TraceScoreRow:
    return TraceScoreRow(
        trace_id=score.trace_id,
        metric=score.metric,
        rule=score.rule or "",
        score=score.score,
        passing=score.passing,
        reason=score.reason,
        error_kind=score.error_kind,
        feedback=score.feedback,
        judge_model=score.judge_model,
        tokens=score.tokens,
        scored_ns=score.scored_ns or time.time_ns(),
    )


def _dataset_row(record: TraceRecord, index: int) -> dict[str, Any]:
    """A trace's row as a checked dataset row, its metadata naming the trace."""
    metadata = dict(record.row.get("metadata") or {})
    metadata["trace_id"] = record.trace_id
    for key in ("service", "model", "session_id", "user_id"):
        value = getattr(record, key)
        if value is not None:
            metadata.setdefault(key, value)
    raw = {**record.row, "metadata": metadata}
    try:
        return row_from_mapping(raw, index + 1, source=f"trace {record.trace_id}").to_raw()
    except DatasetError as exc:
        raise DatasetError(f"trace {record.trace_id} cannot be a dataset row: {exc}") from None
