"""A run's results in the store: a row's results are written together with the run's progress
counter, so a killed process leaves either all of a row or none of it; pages of them, the
run's report and its per-metric summary read them back."""

from __future__ import annotations

import typing
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
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
from ragmeter.runs.storage.result_batches import (
    PlainResult,
    batch_column,
    batch_values,
    from_row,
    insert_batches,
    plain_neighbours,
    plain_scores,
    remove_plain,
    stored_row_data,
)
from ragmeter.runs.storage.result_columns import ScoreColumn, finished_rows, score_columns
from ragmeter.runs.storage.result_table import RESULT_COLUMNS, ResultGroup
from ragmeter.runs.storage.run_records import RunRecords
from ragmeter.store.db import Store, insert_plain, json_text, plain_cursor, plain_rows
from ragmeter.store.models import DatasetRowRecord, ResultBatch, ResultRow, RunRecord
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
        if isinstance(prediction, _FromRow):  # a plain result: all else is its row's
            query = str(raw.get("query") or "")
            given = from_row(raw, prediction.field), from_row(raw, contexts.field)
        else:
            given = _loads(prediction), _loads(contexts)
        out.append(
            ResultRecord(
                row_index=index,
                metric_name=name,
                score=score,
                passing=None if passing is None else bool(passing),
                feedback=feedback,
                error=error,
                prediction=given[0],
                contexts=given[1],
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


@dataclass(frozen=True, slots=True)
class _FromRow:
    """In a plain result's ``_READ`` tuple: its input is field ``field`` of its row."""

    field: str | None


def _plain_read(
    session: Session, dataset_id: int, plain: Sequence[PlainResult]
) -> list[tuple[Any, ...]]:
    """``_READ`` tuples of plain results (row, metric, score): nothing but the score, the
    query left for ``_records`` to take from the row."""
    data = stored_row_data(session, dataset_id, {p[0] for p in plain})
    return [
        (row, name, score, None, None, None, None, _FromRow(prediction), _FromRow(contexts), 0,
         None, None, None, None, data.get(row))
        for row, name, score, prediction, contexts in plain
    ]  # fmt: skip


def metric_rank(session: Session, run_id: str) -> dict[str, int]:
    """Each of the run's metrics' place in its order (a row's results are shown in it)."""
    spec = session.scalar(select(RunRecord.spec).where(RunRecord.id == run_id)) or {}
    names = list(spec.get("metric_names") or spec.get("metrics") or [])
    return {name: i for i, name in enumerate(names)}


def _in_order(rank: dict[str, int], *parts: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Tuples led by (row, metric) of every part, in row then metric order."""
    last = len(rank)
    return sorted(
        (t for part in parts for t in part), key=lambda t: (t[0], rank.get(t[1], last), t[1])
    )


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
    found = plain_rows(session, _records_query(dataset_id, *where))
    plain = plain_scores(session, run_id, metrics=metrics, rows=set(rows))
    rank = metric_rank(session, run_id)
    return _records(_in_order(rank, found, _plain_read(session, dataset_id, plain)))


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
    out = {int(i): RowText(q or "", r, row_id) for i, q, r, row_id in session.execute(query)}
    plain = plain_scores(session, run_id, metrics=[metric], rows=rows)
    data = stored_row_data(session, dataset_id, [p[0] for p in plain])
    for row, text in data.items():
        found = orjson.loads(text)
        response = found.get("response")
        out[row] = RowText(
            str(found.get("query") or "")[:chars],
            None if response is None else str(response)[:chars],
            found.get("id"),
        )
    return out


def neighbours(session: Session, run_id: str, row_index: int) -> tuple[int | None, int | None]:
    """The stored row indexes just before and after ``row_index`` (None at either end)."""
    where = ResultRow.run_id == run_id
    before = select(func.max(ResultRow.row_index)).where(where, ResultRow.row_index < row_index)
    after = select(func.min(ResultRow.row_index)).where(where, ResultRow.row_index > row_index)
    found = session.scalar(before), session.scalar(after)
    plain = plain_neighbours(session, run_id, row_index)
    lower = [r for r in (found[0], plain[0]) if r is not None]
    upper = [r for r in (found[1], plain[1]) if r is not None]
    return (max(lower) if lower else None), (min(upper) if upper else None)


def stored_rows(session: Session, run_id: str) -> int:
    """How many rows of the run have results."""
    return len(finished_rows(session, run_id))


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
    )
    found: list[Any] = list(session.execute(query))
    plain = plain_scores(session, run_id)
    data = stored_row_data(session, dataset_id, [p[0] for p in plain])
    rows = {p: orjson.loads(text) for p, text in data.items()}
    found += [
        (i, m, s, None, str(rows.get(i, {}).get("query") or ""), rows.get(i, {}).get("id"),
         None, None)
        for i, m, s, _, _ in plain
    ]  # fmt: skip
    return [
        ResultRecord(
            row_index=i, metric_name=m, score=s, passing=p, feedback=None, error=e,
            prediction=None, contexts=None, prediction_cost=0, query=q or "",
            raw_dataset={} if row_id is None else {"id": row_id}, error_kind=k,
        )
        for i, m, s, p, q, row_id, e, k in _in_order(metric_rank(session, run_id), found)
    ]  # fmt: skip


def verdicts(
    session: Session, run_id: str, metric: str, *, details: bool = False
) -> list[tuple[Any, ...]]:
    """``(row index, score, passing)`` of each of ``metric``'s results in a run, in row
    order, with its reasoning (``details``) last when asked for (it can be large)."""
    columns: list[Any] = [ResultRow.row_index, ResultRow.score, ResultRow.passing]
    if details:
        columns.append(ResultRow.details)
    query = select(*columns).where(ResultRow.run_id == run_id, ResultRow.metric_name == metric)
    found = [tuple(row) for row in session.execute(query)]
    none = (None,) if details else ()
    found += [
        (row, score, None, *none)
        for row, _, score, _, _ in plain_scores(session, run_id, metrics=[metric])
    ]
    return sorted(found, key=lambda t: t[0])


def worst_records(
    session: Session, run_id: str, dataset_id: int, metric: str, count: int
) -> list[ResultRecord]:
    """The ``count`` lowest scores of ``metric``, then its nulls, ties in row order."""
    count = max(count, 0)
    query = (
        _records_query(dataset_id, ResultRow.run_id == run_id, ResultRow.metric_name == metric)
        .order_by(ResultRow.score.is_(None), ResultRow.score, ResultRow.row_index)
        .limit(count)
    )
    found = list(plain_rows(session, query))
    column = batch_column(session, run_id, metric)
    if len(column.rows) and count:
        lowest = np.lexsort((column.rows, column.scores))[:count]
        rows = {int(column.rows[i]) for i in lowest}
        plain = plain_scores(session, run_id, metrics=[metric], rows=rows)
        found += _plain_read(session, dataset_id, plain)
    found.sort(key=lambda t: (t[2] is None, 0.0 if t[2] is None else t[2], t[0]))
    return _records(found[:count])


def _size(found: Sequence[Any]) -> int:
    """What a ``_READ`` tuple's texts take (prediction, contexts, row, details; a plain
    result's inputs are its row's)."""
    return sum(len(text) for i in (7, 8, 11, 13, 14) if isinstance(text := found[i], str))


def _within(found: Sequence[Any], max_bytes: int | None) -> Sequence[Any]:
    """The first ``_READ`` tuples of ``found`` up to the one whose texts pass ``max_bytes``
    (included), or all."""
    if max_bytes is None:
        return found
    size = 0
    for i, item in enumerate(found):
        size += _size(item)
        if size > max_bytes:
            return found[: i + 1]
    return found


def _page(
    session: Session, run_id: str, dataset_id: int, offset: int, limit: int
) -> list[tuple[Any, ...]]:
    """``_READ`` tuples of results ``offset`` to ``offset + limit`` of a run in row then
    metric order, its plain results and its rows of results alike."""
    rank = metric_rank(session, run_id)
    keys = plain_rows(
        session,
        select(ResultRow.row_index, ResultRow.metric_name).where(ResultRow.run_id == run_id),
    )
    keys += [(p[0], p[1]) for p in plain_scores(session, run_id)]
    if not keys:
        return []
    page = _in_order(rank, keys)[offset : offset + max(limit, 0)]
    if not page:
        return []
    wanted = set(page)
    lo, hi = page[0][0], page[-1][0]
    query = _records_query(
        dataset_id, ResultRow.run_id == run_id, ResultRow.row_index.between(lo, hi)
    )
    found = plain_rows(session, query)
    read = _plain_read(session, dataset_id, plain_scores(session, run_id, lo=lo, hi=hi))
    return [t for t in _in_order(rank, found, read) if (t[0], t[1]) in wanted]


class ResultStore(RunRecords):
    """The runs of one store with their results."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._summaries: dict[tuple[str, int], dict[str, MetricSummary]] = {}

    def finished_rows(self, run_id: str) -> set[int]:
        with self.store.session() as session:
            return finished_rows(session, run_id)

    def commit_results(
        self,
        run_id: str,
        groups: Sequence[ResultGroup],
        rows: int,
        usage: dict[str, float],
        *,
        batches: Sequence[tuple[Any, ...]] = (),
    ) -> str:
        """Write finished rows' results (groups of tuples, JSON as text, inserted in order;
        ``batches``: records of plain results, ``batch_values``) and advance the run's
        counter by ``rows``, in one transaction; the run's state after it
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
                insert_batches(session, batches)
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
        with self.store.session() as session:
            plain_total = session.scalar(
                select(func.coalesce(func.sum(ResultBatch.size), 0)).where(
                    ResultBatch.run_id == run_id
                )
            )
            total = session.scalar(select(func.count()).select_from(ResultRow).where(where)) or 0
            total += int(plain_total or 0)
            if plain_total:
                found = _page(session, run_id, record.dataset_id, offset, limit)
                return _records(_within(found, max_bytes)), total
            # every result a row of its own: a page of one statement, read a few at a time
            query = (
                _records_query(record.dataset_id, where)
                .order_by(ResultRow.row_index, ResultRow.id)
                .offset(offset)
                .limit(limit)
            )
            if max_bytes is None:
                return _read_records(session, query), total
            read: list[Any] = []
            size = 0
            with plain_cursor(session, query) as cursor:
                while size <= max_bytes and (few := cursor.fetchmany(8)):
                    for item in few:
                        read.append(item)
                        size += _size(item)
                        if size > max_bytes:
                            break
            return _records(read), total

    def iter_results(self, run_id: str, rows: int = 100) -> Iterator[ResultRecord]:
        """Every result in row then metric order, read ``rows`` rows at a time (one short
        session each), so a run of any size is never held whole."""
        record = self.get(run_id)
        where = ResultRow.run_id == run_id
        with self.store.session() as session:
            last = session.scalar(select(func.max(ResultRow.row_index)).where(where))
            plain_last = session.scalar(
                select(func.max(ResultBatch.last_row)).where(ResultBatch.run_id == run_id)
            )
            rank = metric_rank(session, run_id)
        if plain_last is not None:
            last = plain_last if last is None else max(last, plain_last)
        for start in range(0, -1 if last is None else last + 1, rows):
            end = start + rows - 1
            at = ResultRow.row_index.between(start, end)
            query = _records_query(record.dataset_id, where, at)
            with self.store.session() as session:
                found = plain_rows(session, query)
                plain = plain_scores(session, run_id, lo=start, hi=end)
                read = _plain_read(session, record.dataset_id, plain)
            yield from _records(_in_order(rank, found, read))

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
        rows = {u[2] for u in updates}
        try:
            with self.store.session() as session:
                plain = plain_scores(session, run_id, metrics={u[3] for u in updates}, rows=rows)
                wanted = {(u[2], u[3]) for u in updates}
                if found := {(p[0], p[1]) for p in plain} & wanted:
                    _unbatched(session, run_id, found)
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
    """Delete every result of the rows holding an upstream null (plain results of those rows
    too) and recount ``done_rows`` from the rows left (in the caller's transaction)."""
    failed = (
        select(ResultRow.row_index).where(ResultRow.run_id == run_id, _upstream_null()).distinct()
    )
    rows = [row for (row,) in plain_rows(session, failed)]
    if rows:
        session.execute(
            delete(ResultRow).where(ResultRow.run_id == run_id, ResultRow.row_index.in_(rows))
        )
        remove_plain(session, run_id, rows)
    done = len(finished_rows(session, run_id))
    session.execute(update(RunRecord).where(RunRecord.id == run_id).values(done_rows=done))


def _unbatched(session: Session, run_id: str, keys: set[tuple[int, str]]) -> None:
    """The plain results of ``keys`` (row, metric) made rows of ``results`` (a result that
    gains more than its score), in the session's transaction."""
    rows = {row for row, _ in keys}
    taken = remove_plain(session, run_id, rows, {metric for _, metric in keys})
    dataset_id = session.scalar(select(RunRecord.dataset_id).where(RunRecord.id == run_id))
    data = stored_row_data(session, dataset_id or 0, rows)
    values = []
    for (row, metric, score, prediction, contexts), id_key, query_key in taken:
        if (row, metric) not in keys:  # taken with the rows asked for: back into a batch
            fields = (prediction, contexts)
            again = batch_values(
                run_id, metric, [row], [score], [id_key or None], [query_key], fields
            )
            insert_batches(session, [again])
            continue
        found = orjson.loads(data[row]) if row in data else {}
        values.append(
            (run_id, row, metric, score, None, None, None, None,
             json_text(from_row(found, prediction)), json_text(from_row(found, contexts)), 0,
             str(found.get("query") or ""), None, None, None, id_key or None, query_key)
        )  # fmt: skip
    insert_plain(session, ResultRow, RESULT_COLUMNS, values)


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
        None if r.prediction is None else json_text(r.prediction),
        None if r.contexts is None else json_text(r.contexts),
        int(r.prediction_cost or 0),
        r.query,
        json_text(r.raw_dataset),
        None if r.cost is None else json_text(r.cost),
        None if r.details is None else json_text(r.details),
        id_key,
        query_key,
    )
