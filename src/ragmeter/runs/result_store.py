"""A run's results in the store: a row's results are written together with the run's progress
counter, so a killed process leaves either all of a row or none of it; pages of them, the
run's report and its per-metric summary read them back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ragmeter._public import public_text
from ragmeter.errors import StoreError
from ragmeter.metrics.retrieval import LEGACY_NO_RELEVANT_REASON, NO_RELEVANT_REASON
from ragmeter.metrics.scales import scale_label, scale_labels
from ragmeter.reports import EvaluationReport, MetricSummary, ResultRecord
from ragmeter.reports.report import json_default
from ragmeter.reports.stats import mean_summary
from ragmeter.runs.run_records import RunRecords
from ragmeter.store import ResultRow, RunRecord, Store
from ragmeter.store.pairing import row_keys

__all__ = ["ResultStore", "forget_upstream_failures"]


def _summary(scores: dict[str, list[float | None]]) -> dict[str, MetricSummary]:
    """Per metric ``stats.mean_summary`` with the metric's scale (``0-1``) where known."""
    return {
        name: {
            **mean_summary(np.array(values, dtype=np.float64)),  # None -> NaN
            "scale": scale_label(name),
        }
        for name, values in scores.items()
    }


class ResultStore(RunRecords):
    """The runs of one store with their results."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._summaries: dict[tuple[str, int], dict[str, MetricSummary]] = {}

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
        report = EvaluationReport(records, names, record.done_rows, seconds, dict(record.usage))
        report.scales = scale_labels(names)
        return report

    def summary(self, record: RunRecord) -> dict[str, MetricSummary]:
        """Per metric: mean, count, nulls, a 95% bootstrap CI over the rows done so far with
        ``ci_note`` when it is not informative, and the metric's scale."""
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
