"""Human labels in the store: a reviewer's value of one dataset row on one metric, with a
comment. A label belongs to the row of a dataset version (its position), so every run of
that version finds it, and a reviewer has one label per row and metric (a new one replaces
it). Values are on the metric's own scale; pass/fail is 1/0."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ragmeter.errors import ConfigError, NotFoundError, StoreError, clip
from ragmeter.metrics.scales import format_scale, metric_scale
from ragmeter.reports.human import HumanLabels
from ragmeter.store.db import Store
from ragmeter.store.locks import write_lock
from ragmeter.store.models import (
    DatasetRecord,
    LabelRecord,
    ReviewItemRecord,
    ReviewQueueRecord,
    RunRecord,
    utc_now,
)

__all__ = [
    "MAX_COMMENT",
    "Label",
    "LabelStore",
    "NewLabel",
    "check_label",
    "labels_of",
    "own_rows_only",
    "picked",
]

#: characters of a label's comment
MAX_COMMENT = 2000
#: characters of a metric's or reviewer's name
_MAX_NAME = 200
#: rows named in one IN (...) list
_IN_LIST = 500


@dataclass(frozen=True)
class NewLabel:
    """A label to keep: the row's position in its dataset version, the metric, who says so,
    the value and why."""

    position: int
    metric: str
    reviewer: str
    value: float
    comment: str = ""


@dataclass(frozen=True)
class Label:
    """A stored label (``position`` is the row's index in the dataset version, the same as
    a run's ``row_index``)."""

    dataset_id: int
    position: int
    metric: str
    reviewer: str
    value: float
    comment: str
    run_id: str | None
    created_at: datetime | None
    updated_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset_id": self.dataset_id,
            "row_index": self.position,
            "metric": self.metric,
            "reviewer": self.reviewer,
            "value": self.value,
            "comment": self.comment,
            "run_id": self.run_id,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }


def check_label(label: NewLabel, rows: int) -> None:
    """ConfigError naming what is wrong with ``label`` for a dataset of ``rows`` rows: a
    position outside it, an empty or long name, a value that is not a finite number on the
    metric's scale (when the metric is a registered one), a comment past ``MAX_COMMENT``."""
    if not 0 <= label.position < rows:
        raise ConfigError(f"row {label.position} is not in the dataset (rows 0 to {rows - 1})")
    for field, text in (("metric", label.metric), ("reviewer", label.reviewer)):
        if not text or len(text) > _MAX_NAME:
            raise ConfigError(f"a label's {field} must be 1 to {_MAX_NAME} characters")
    value = label.value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"a label's value must be a finite number, not {clip(repr(value))}")
    scale = metric_scale(label.metric)
    if scale is not None:
        low, high = scale
        if (low is not None and value < low) or (high is not None and value > high):
            raise ConfigError(
                f"label value {value:g} is outside {label.metric}'s scale {format_scale(scale)}"
            )
    if len(label.comment) > MAX_COMMENT:
        raise ConfigError(f"a label's comment is longer than {MAX_COMMENT} characters")


def own_rows_only(record: RunRecord) -> bool:
    """Whether only labels made on this run count for it: its target (a space's retriever,
    an app) filled the rows it judged, so another run's labels of the same dataset row were
    of other contexts or another answer."""
    target = (record.lineage or {}).get("target") or {}
    return str(target.get("kind") or "none") != "none"


def _label(record: LabelRecord) -> Label:
    return Label(
        record.dataset_id,
        record.position,
        record.metric,
        record.reviewer,
        record.value,
        record.comment,
        record.run_id,
        record.created_at,
        record.updated_at,
    )


def _filtered(query: Any, dataset_id: int, metric: str | None, reviewer: str | None) -> Any:
    """``query`` of one dataset version's labels, of one metric and reviewer if given."""
    table = LabelRecord
    query = query.where(table.dataset_id == dataset_id)
    if metric is not None:
        query = query.where(table.metric == metric)
    if reviewer is not None:
        query = query.where(table.reviewer == reviewer)
    return query


class LabelStore:
    """The labels of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _rows(self, session: Session, dataset_id: int) -> int:
        found = session.get(DatasetRecord, dataset_id)
        if found is None:
            raise NotFoundError(f"no dataset {dataset_id}")
        return int(found.row_count)

    def _existing(
        self, session: Session, dataset_id: int, positions: set[int]
    ) -> dict[tuple[int, str, str], LabelRecord]:
        """The labels of these rows by (position, metric, reviewer), read in slices of
        ``_IN_LIST`` rows (a database caps a statement's parameters)."""
        table = LabelRecord
        ordered = sorted(positions)
        found: dict[tuple[int, str, str], LabelRecord] = {}
        for start in range(0, len(ordered), _IN_LIST):
            some = ordered[start : start + _IN_LIST]
            query = select(table).where(table.dataset_id == dataset_id, table.position.in_(some))
            found.update({(r.position, r.metric, r.reviewer): r for r in session.scalars(query)})
        return found

    def put(self, dataset_id: int, labels: Sequence[NewLabel], run_id: str | None = None) -> int:
        """Keep ``labels`` on rows of dataset version ``dataset_id`` in one transaction (all
        or none; each checked first, ConfigError naming the first bad one by its index), a
        reviewer's earlier label of the same row and metric replaced; how many."""
        table = LabelRecord
        try:
            with self.store.session() as session:
                write_lock(session.connection(), "ragmeter-labels")
                rows = self._rows(session, dataset_id)
                for index, label in enumerate(labels):
                    try:
                        check_label(label, rows)
                    except ConfigError as exc:
                        raise ConfigError(f"label {index + 1}: {exc}") from None
                existing = self._existing(session, dataset_id, {lb.position for lb in labels})
                for label in labels:
                    record = existing.get((label.position, label.metric, label.reviewer))
                    if record is None:
                        record = table(
                            dataset_id=dataset_id,
                            position=label.position,
                            metric=label.metric,
                            reviewer=label.reviewer,
                        )
                        session.add(record)
                        existing[(label.position, label.metric, label.reviewer)] = record
                    record.value = float(label.value)
                    record.comment = label.comment
                    record.run_id = run_id
                    record.updated_at = utc_now()
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot keep labels of dataset {dataset_id}: {exc}") from exc
        return len(labels)

    def remove(self, dataset_id: int, position: int, metric: str, reviewer: str) -> bool:
        """Forget a reviewer's label of one row and metric; whether there was one."""
        table = LabelRecord
        with self.store.session() as session:
            done = session.execute(
                delete(table).where(
                    table.dataset_id == dataset_id,
                    table.position == position,
                    table.metric == metric,
                    table.reviewer == reviewer,
                )
            )
            session.commit()
        return bool(getattr(done, "rowcount", 0))

    def of_dataset(
        self,
        dataset_id: int,
        *,
        metric: str | None = None,
        reviewer: str | None = None,
        positions: Iterable[int] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[Label]:
        """The labels of a dataset version (of one metric, one reviewer, some rows), by row,
        metric and reviewer (``limit`` of them from ``offset``)."""
        table = LabelRecord
        query = _filtered(select(table), dataset_id, metric, reviewer)
        if positions is not None:
            query = query.where(table.position.in_(set(positions)))
        query = query.order_by(table.position, table.metric, table.reviewer).offset(offset)
        if limit is not None:
            query = query.limit(limit)
        with self.store.session() as session:
            return [_label(r) for r in session.scalars(query)]

    def count(
        self, dataset_id: int, *, metric: str | None = None, reviewer: str | None = None
    ) -> int:
        """How many labels a dataset version has (of one metric, one reviewer)."""
        query = _filtered(
            select(func.count()).select_from(LabelRecord), dataset_id, metric, reviewer
        )
        with self.store.session() as session:
            return int(session.scalar(query) or 0)

    def dataset_of_run(self, run_id: str) -> int:
        """The dataset version a run's rows come from (their labels are the run's)."""
        with self.store.session() as session:
            found = session.scalar(select(RunRecord.dataset_id).where(RunRecord.id == run_id))
        if found is None:
            raise NotFoundError(f"no run '{clip(run_id)}'")
        return int(found)

    def of_run(
        self, run_id: str, *, metric: str | None = None, reviewer: str | None = None
    ) -> list[Label]:
        """The labels of the rows of a run's dataset version (``position`` is the run's
        ``row_index``)."""
        return self.of_dataset(self.dataset_of_run(run_id), metric=metric, reviewer=reviewer)

    def human(self, record: RunRecord) -> dict[str, HumanLabels]:
        """The labels that count for a run (``own_rows_only``), by metric: each labelled
        row's mean over its reviewers, with the chance it had of being picked where review
        queues picked rows otherwise than uniformly at random (``picked``)."""
        table = LabelRecord
        query = select(table.metric, table.position, table.value).where(
            table.dataset_id == record.dataset_id
        )
        if own_rows_only(record):
            query = query.where(table.run_id == record.id)
        with self.store.session() as session:
            found = session.execute(query.order_by(table.metric, table.position)).all()
            queues = picked(session, record.id) if found else {}  # a run list's usual case
        by_metric: dict[str, dict[int, list[float]]] = {}
        for metric, position, value in found:
            by_metric.setdefault(metric, {}).setdefault(int(position), []).append(float(value))
        return {metric: labels_of(rows, queues.get(metric)) for metric, rows in by_metric.items()}


def picked(session: Session, run_id: str) -> dict[str, dict[int, float]]:
    """Per metric whose review queues of the run did not all pick uniformly at random:
    each row a queue could reach by chance (``random``, ``stratified``) and its chance of
    being picked (the largest, when several queues picked it). Rows reached only by rules
    without chance (``threshold``, ``failures``, ``disagreement``) are absent: no
    correction holds for them."""
    queues = session.execute(
        select(ReviewQueueRecord.id, ReviewQueueRecord.metric, ReviewQueueRecord.rule).where(
            ReviewQueueRecord.run_id == run_id
        )
    ).all()
    uneven = {metric for _, metric, rule in queues if rule != "random"}
    out: dict[str, dict[int, float]] = {metric: {} for metric in uneven}
    chosen = [qid for qid, metric, rule in queues if metric in uneven and rule in _BY_CHANCE]
    if not chosen:
        return out
    metric_of = {qid: metric for qid, metric, _ in queues}
    items = session.execute(
        select(
            ReviewItemRecord.queue_id, ReviewItemRecord.row_index, ReviewItemRecord.probability
        ).where(ReviewItemRecord.queue_id.in_(chosen))
    ).all()
    for qid, row, probability in items:
        rows = out[metric_of[qid]]
        rows[int(row)] = max(rows.get(int(row), 0.0), float(probability))
    return out


#: the review rules that pick rows by chance, each with a known probability
_BY_CHANCE = frozenset({"random", "stratified"})


def labels_of(rows: dict[int, list[float]], chances: dict[int, float] | None) -> HumanLabels:
    """A metric's labels: each row's mean over its reviewers; with ``chances`` (queues
    that did not pick uniformly), only the rows picked by chance, with their chance."""
    left_out = 0
    if chances is not None:
        kept = {row: values for row, values in rows.items() if row in chances}
        left_out = len(rows) - len(kept)
        rows = kept
    return HumanLabels(
        rows=tuple(rows),
        values=tuple(sum(v) / len(v) for v in rows.values()),
        inclusion=None if chances is None else tuple(chances[row] for row in rows),
        labels=sum(len(v) for v in rows.values()),
        left_out=left_out,
    )
