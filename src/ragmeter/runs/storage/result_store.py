"""A run's results in the store: a row's results are written together with the run's progress
counter, so a killed process leaves either all of a row or none of it; pages of them, the
run's report and its per-metric summary read them back."""

from __future__ import annotations

import typing
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import (
    Select,
    Table,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ragmeter._public import public_text
from ragmeter.errors import StoreError
from ragmeter.metrics.retrieval import LEGACY_NO_RELEVANT_REASON, NO_RELEVANT_REASON
from ragmeter.metrics.scales import scale_label, scale_labels
from ragmeter.reports import EvaluationReport, MetricSummary, ResultRecord
from ragmeter.reports.calibrated import CalibratedMean
from ragmeter.reports.human import calibrate, summary_fields
from ragmeter.reports.stats import mean_summary
from ragmeter.runs.storage._owner import this_process
from ragmeter.runs.storage.labels import LabelStore
from ragmeter.runs.storage.result_columns import ScoreColumn, finished_rows, score_columns
from ragmeter.runs.storage.result_table import RESULT_COLUMNS, ResultGroup
from ragmeter.runs.storage.run_records import RunRecords
from ragmeter.store.db import Store, insert_plain, json_text, plain_cursor, plain_rows
from ragmeter.store.models import DatasetRowRecord, ResultRow, RunRecord
from ragmeter.store.pairing import row_keys
from ragmeter.store.rowdata import row_field, row_of

__all__ = [
    "ResultStore",
    "RowText",
    "calibrated_means",
    "forget_upstream_failures",
    "light_records",
    "neighbours",
    "null_reasons",
    "row_records",
    "row_texts",
    "stored_rows",
    "verdicts",
    "worst_records",
]


def _summary(columns: dict[str, ScoreColumn]) -> dict[str, MetricSummary]:
    """Per metric ``stats.mean_summary`` with the metric's scale (``0-1``) where known."""
    return {
        name: {**mean_summary(column.scores), "scale": scale_label(name)}
        for name, column in columns.items()
    }


#: a result as read back: its columns, JSON ones as text, and its dataset row's text
_READ = (
    ResultRow.row_index,
    ResultRow.metric_name,
    ResultRow.score,
    ResultRow.passing,
    ResultRow.feedback,
    ResultRow.error,
    ResultRow.error_kind,
    cast(ResultRow.prediction, Text),
    cast(ResultRow.contexts, Text),
    ResultRow.prediction_cost,
    ResultRow.query,
    cast(ResultRow.raw_dataset, Text),
    cast(ResultRow.cost, Text),
    cast(ResultRow.details, Text),
    DatasetRowRecord.data,
)


def _loads(text: Any) -> Any:
    return None if text is None else orjson.loads(text)


def _records(found: Iterable[Sequence[Any]]) -> list[ResultRecord]:
    """Records from ``_READ`` tuples; the results of one row share its dataset row's dict."""
    out: list[ResultRecord] = []
    shared: tuple[int, dict[str, Any]] = (-1, {})
    for index, name, score, passing, feedback, error, kind, *texts in found:
        prediction, contexts, cost, query, own, usage, details, data = texts
        if own is not None:
            raw = orjson.loads(own)
        else:
            if shared[0] != index:
                shared = (index, orjson.loads(data) if data is not None else {})
            raw = shared[1]
        out.append(
            ResultRecord(
                row_index=index,
                metric_name=name,
                score=score,
                passing=None if passing is None else bool(passing),
                feedback=feedback,
                error=error,
                prediction=_loads(prediction),
                contexts=_loads(contexts),
                prediction_cost=cost,
                query=query,
                raw_dataset=raw,
                cost=_loads(usage),
                error_kind=kind,
                details=_loads(details),
            )
        )
    return out


def _records_query(dataset_id: int, *where: Any) -> Select[*tuple[Any, ...]]:
    """SQL: the results ``where`` says (of one run, whose dataset is ``dataset_id``) as
    ``_read_records`` reads them, each with its row."""
    return select(*_READ).outerjoin(DatasetRowRecord, row_of(ResultRow, dataset_id)).where(*where)


def _read_records(session: Session, query: Select[*tuple[Any, ...]]) -> list[ResultRecord]:
    """The results of a ``_records_query`` as records, their rows filled in."""
    return _records(plain_rows(session, query))


def row_records(
    session: Session,
    run_id: str,
    dataset_id: int,
    rows: Collection[int],
    metrics: Collection[str] | None = None,
) -> list[ResultRecord]:
    """The results of ``rows`` of a run (of ``metrics``, else all), in row then metric
    order, whole: their rows, answers and reasoning."""
    where = [ResultRow.run_id == run_id, ResultRow.row_index.in_(set(rows))]
    if metrics is not None:
        where.append(ResultRow.metric_name.in_(set(metrics)))
    query = _records_query(dataset_id, *where).order_by(ResultRow.row_index, ResultRow.id)
    return _read_records(session, query)


#: a null reason is grouped by (and shown with) this many characters of its message
REASON_CHARS = 300


def null_reasons(
    session: Session, run_id: str, metric: str, limit: int
) -> list[tuple[str | None, str, int]]:
    """(error kind, reason, count) of ``metric``'s null scores in a run, the most frequent
    first, at most ``limit`` of them; reasons grouped on their first ``REASON_CHARS``."""
    reason = func.substr(ResultRow.error, 1, REASON_CHARS)
    query = (
        select(ResultRow.error_kind, reason, func.count())
        .where(
            ResultRow.run_id == run_id,
            ResultRow.metric_name == metric,
            ResultRow.score.is_(None),
        )
        .group_by(ResultRow.error_kind, reason)
        .order_by(func.count().desc(), ResultRow.error_kind, reason)
        .limit(max(limit, 0))
    )
    return [(kind, text or "", int(n)) for kind, text, n in session.execute(query)]


@dataclass(frozen=True)
class RowText:
    """The start of a stored row's query and response, and its ``id`` (None without one)."""

    query: str
    response: str | None
    row_id: Any


def row_texts(
    session: Session,
    run_id: str,
    dataset_id: int,
    metric: str,
    chars: int,
    rows: Collection[int] | None = None,
) -> dict[int, RowText]:
    """By row index, the first ``chars`` characters of the query and response of the rows
    of a run that ``metric`` scored (of ``rows``, else all): the row as the run scored it."""
    where = [ResultRow.run_id == run_id, ResultRow.metric_name == metric]
    if rows is not None:
        where.append(ResultRow.row_index.in_(set(rows)))
    query = (
        select(
            ResultRow.row_index,
            func.substr(ResultRow.query, 1, chars),
            func.substr(row_field(ResultRow, "response", text=True), 1, chars),
            row_field(ResultRow, "id"),
        )
        .outerjoin(DatasetRowRecord, row_of(ResultRow, dataset_id))
        .where(*where)
    )
    return {int(i): RowText(q or "", r, row_id) for i, q, r, row_id in session.execute(query)}


def neighbours(session: Session, run_id: str, row_index: int) -> tuple[int | None, int | None]:
    """The stored row indexes just before and after ``row_index`` (None at either end)."""
    where = ResultRow.run_id == run_id
    before = select(func.max(ResultRow.row_index)).where(where, ResultRow.row_index < row_index)
    after = select(func.min(ResultRow.row_index)).where(where, ResultRow.row_index > row_index)
    return session.scalar(before), session.scalar(after)


def stored_rows(session: Session, run_id: str) -> int:
    """How many rows of the run have results."""
    query = select(func.count(func.distinct(ResultRow.row_index))).where(ResultRow.run_id == run_id)
    return int(session.scalar(query) or 0)


def light_records(session: Session, run_id: str, dataset_id: int) -> list[ResultRecord]:
    """Every result of a run in row then metric order, light: its score, verdict, query,
    row ``id`` (as ``raw_dataset``) and null reason, without answers, contexts or reasoning
    (what a gate decides on; ``row_records`` reads the few it shows whole)."""
    query = (
        select(
            ResultRow.row_index,
            ResultRow.metric_name,
            ResultRow.score,
            ResultRow.passing,
            ResultRow.query,
            row_field(ResultRow, "id"),
            ResultRow.error,
            ResultRow.error_kind,
        )
        .outerjoin(DatasetRowRecord, row_of(ResultRow, dataset_id))
        .where(ResultRow.run_id == run_id)
        .order_by(ResultRow.row_index, ResultRow.id)
    )
    return [
        ResultRecord(
            row_index=i, metric_name=m, score=s, passing=p, feedback=None, error=e,
            prediction=None, contexts=None, prediction_cost=0, query=q or "",
            raw_dataset={} if row_id is None else {"id": row_id}, error_kind=k,
        )
        for i, m, s, p, q, row_id, e, k in session.execute(query)
    ]  # fmt: skip


def verdicts(
    session: Session, run_id: str, metric: str, *, details: bool = False
) -> list[tuple[Any, ...]]:
    """``(row index, score, passing)`` of each of ``metric``'s results in a run, in row
    order, with its reasoning (``details``) last when asked for (it can be large)."""
    columns: list[Any] = [ResultRow.row_index, ResultRow.score, ResultRow.passing]
    if details:
        columns.append(ResultRow.details)
    query = (
        select(*columns)
        .where(ResultRow.run_id == run_id, ResultRow.metric_name == metric)
        .order_by(ResultRow.row_index)
    )
    return [tuple(row) for row in session.execute(query)]


def worst_records(
    session: Session, run_id: str, dataset_id: int, metric: str, count: int
) -> list[ResultRecord]:
    """The ``count`` lowest scores of ``metric``, then its nulls, ties in row order."""
    query = (
        _records_query(dataset_id, ResultRow.run_id == run_id, ResultRow.metric_name == metric)
        .order_by(ResultRow.score.is_(None), ResultRow.score, ResultRow.row_index)
        .limit(max(count, 0))
    )
    return _read_records(session, query)


def _size(found: Sequence[Any]) -> int:
    """What a ``_READ`` tuple's texts take (prediction, contexts, row, details)."""
    return sum(len(found[i] or "") for i in (7, 8, 11, 13, 14))


class ResultStore(RunRecords):
    """The runs of one store with their results."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._summaries: dict[tuple[str, int], dict[str, MetricSummary]] = {}

    def finished_rows(self, run_id: str) -> set[int]:
        with self.store.session() as session:
            return finished_rows(session, run_id)

    def commit_results(
        self, run_id: str, groups: Sequence[ResultGroup], rows: int, usage: dict[str, float]
    ) -> str:
        """Write finished rows' results (groups of tuples, JSON as text, inserted in order) and
        advance the run's counter by ``rows``, in one transaction; the run's state after it
        (a run no longer running has its ``resumable`` updated). Nothing is written, and
        ``"taken over"`` answered, once another process owns the run (a server that took it
        over when this one's lease passed): its rows are that process's to store."""
        left = RunRecord.done_rows + rows < RunRecord.total_rows
        mine = or_(RunRecord.owner.is_(None), RunRecord.owner == this_process())
        try:
            with self.store.session() as session:
                counted = session.execute(  # first: it holds the run's row until the commit
                    update(RunRecord)
                    .where(RunRecord.id == run_id, mine)
                    .values(
                        done_rows=RunRecord.done_rows + rows,
                        usage=usage,
                        resumable=and_(RunRecord.state != "running", left),
                    )
                )
                if not getattr(counted, "rowcount", 0):
                    session.rollback()
                    return "taken over"
                for group in groups:
                    insert_plain(session, ResultRow, group.columns, group.values)
                state = session.scalar(select(RunRecord.state).where(RunRecord.id == run_id))
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store results of run '{run_id}': {exc}") from exc
        return str(state)

    def commit_rows(
        self, run_id: str, records: Sequence[ResultRecord], usage: dict[str, float]
    ) -> str:
        """``commit_results`` of records, each keeping its own copy of its row."""
        rows = len({r.row_index for r in records})
        values = [_values(run_id, r) for r in records]
        return self.commit_results(run_id, [ResultGroup(RESULT_COLUMNS, values)], rows, usage)

    def results(
        self, run_id: str, offset: int = 0, limit: int = 100, max_bytes: int | None = None
    ) -> tuple[list[ResultRecord], int]:
        """Results in row then metric order, and how many the run has. With ``max_bytes`` the
        list stops once its texts and rows pass that size, read a few results at a time."""
        record = self.get(run_id)
        where = ResultRow.run_id == run_id
        query = (
            _records_query(record.dataset_id, where)
            .order_by(ResultRow.row_index, ResultRow.id)
            .offset(offset)
            .limit(limit)
        )
        with self.store.session() as session:
            total = session.scalar(select(func.count()).select_from(ResultRow).where(where)) or 0
            if max_bytes is None:
                return _read_records(session, query), total
            found: list[Any] = []
            size = 0
            with plain_cursor(session, query) as cursor:
                while size <= max_bytes and (few := cursor.fetchmany(8)):
                    for item in few:
                        found.append(item)
                        size += _size(item)
                        if size > max_bytes:
                            break
            return _records(found), total

    def iter_results(self, run_id: str, rows: int = 100) -> Iterator[ResultRecord]:
        """Every result in row then metric order, read ``rows`` rows at a time (one short
        session each), so a run of any size is never held whole."""
        record = self.get(run_id)
        where = ResultRow.run_id == run_id
        with self.store.session() as session:
            last = session.scalar(select(func.max(ResultRow.row_index)).where(where))
        for start in range(0, -1 if last is None else last + 1, rows):
            at = ResultRow.row_index.between(start, start + rows - 1)
            query = _records_query(record.dataset_id, where, at)
            with self.store.session() as session:
                found = _read_records(session, query.order_by(ResultRow.row_index, ResultRow.id))
            yield from found

    def report(self, run_id: str) -> EvaluationReport:
        """The run's stored results as a report (scores, summary, ``to_jsonl``)."""
        record = self.get(run_id)
        records, _total = self.results(run_id, 0, 1_000_000_000)
        names = list(record.spec.get("metric_names") or record.spec.get("metrics", []))
        seconds = 0.0
        if record.started_at is not None and record.finished_at is not None:
            seconds = (record.finished_at - record.started_at).total_seconds()
        report = EvaluationReport(records, names, record.done_rows, seconds, dict(record.usage))
        report.scales = scale_labels(names)
        report.human_labels = LabelStore(self.store).human(record)
        return report

    def summary(self, record: RunRecord) -> dict[str, MetricSummary]:
        """Per metric: mean, count, nulls, a 95% bootstrap CI over the rows done so far with
        ``ci_note`` when it is not informative, and the metric's scale."""
        key = (record.id, record.done_rows)
        cached = self._summaries.get(key)
        if cached is not None:  # the scores stay, the labels may have changed
            return self._calibrated(record, cached)
        metrics = list(record.spec.get("metric_names") or record.spec.get("metrics", []))
        with self.store.session() as session:
            out = _summary(score_columns(session, record.id, metrics))
        if len(self._summaries) > 256:
            self._summaries.clear()
        self._summaries[key] = out
        return self._calibrated(record, out)

    def keep_repeats(self, run_id: str, records: Iterable[ResultRecord]) -> int:
        """Write each record's repeated scores (``details.values.repeat_N`` of
        ``ragmeter eval --repeats``) into the stored result of its row and metric, whose
        score stays the first repeat's: what a review queue's ``disagreement`` rule reads.
        How many results got them."""
        updates = [
            (json_text(r.details), run_id, r.row_index, r.metric_name)
            for r in records
            if any(str(k).startswith("repeat_") for k in ((r.details or {}).get("values") or {}))
        ]
        if not updates:
            return 0
        table = typing.cast(Table, ResultRow.__table__)
        statement = (
            update(table)
            .where(
                table.c.run_id == bindparam("b_run"),
                table.c.row_index == bindparam("b_row"),
                table.c.metric_name == bindparam("b_metric"),
            )
            .values(details=bindparam("b_details", type_=Text))
        )
        keys = ("b_details", "b_run", "b_row", "b_metric")
        try:
            with self.store.session() as session:
                session.execute(statement, [dict(zip(keys, u, strict=True)) for u in updates])
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot keep the repeats of run '{run_id}': {exc}") from exc
        return len(updates)

    def _calibrated(
        self, record: RunRecord, summary: dict[str, MetricSummary]
    ) -> dict[str, MetricSummary]:
        """``summary`` with each labelled metric's calibrated mean (``EvaluationReport.
        summary``'s keys), read afresh: labels change while the scores stay."""
        found = calibrated_means(self.store, record, list(summary))
        if not found:
            return summary
        out = dict(summary)
        for name, corrected in found.items():
            out[name] = {**summary[name], **summary_fields(corrected)}
        return out


def calibrated_means(
    store: Store, record: RunRecord, metrics: Sequence[str]
) -> dict[str, CalibratedMean]:
    """The mean of each of ``metrics`` with human labels, corrected by them
    (``reports.calibrated``), from the run's scores read by row."""
    human = LabelStore(store).human(record)
    wanted = [name for name in metrics if name in human]
    out: dict[str, CalibratedMean] = {}
    if not wanted:
        return out
    with store.session() as session:
        for name, column in score_columns(session, record.id, wanted).items():
            out[name] = calibrate(column.rows, column.scores, human[name])
    return out


def _upstream_null() -> Any:
    """SQL: a result whose null score an upstream failure caused. Results stored before
    kinds were (NULL kind) count as upstream unless they hold the no-relevant-item reason."""
    return and_(
        ResultRow.score.is_(None),
        or_(
            ResultRow.error_kind == "upstream",
            and_(
                ResultRow.error_kind.is_(None),
                or_(
                    ResultRow.error.is_(None),
                    ResultRow.error.not_in([NO_RELEVANT_REASON, LEGACY_NO_RELEVANT_REASON]),
                ),
            ),
        ),
    )


def forget_upstream_failures(session: Session, run_id: str) -> None:
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


def _values(run_id: str, r: ResultRecord) -> tuple[Any, ...]:
    """A record as a tuple of ``RESULT_COLUMNS`` (its row kept as its own copy)."""
    id_key, query_key = row_keys(r.query, r.raw_dataset)
    return (
        run_id,
        r.row_index,
        r.metric_name,
        None if r.score is None else float(r.score),
        None if r.passing is None else bool(r.passing),
        r.feedback,
        None if r.error is None else public_text(r.error),
        r.error_kind,
        json_text(r.prediction),
        json_text(r.contexts),
        int(r.prediction_cost or 0),
        r.query,
        json_text(r.raw_dataset),
        json_text(r.cost),
        None if r.details is None else json_text(r.details),
        id_key,
        query_key,
    )
