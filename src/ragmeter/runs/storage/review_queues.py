"""Review queues in the store: rows of a run picked for people to label on one metric, each
given to some reviewers in an order, with the chance the sampling rule had of picking it
(``runs.review.sampling``). A queue goes with its run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import NotFoundError, StoreError, clip
from ragmeter.store.db import Store
from ragmeter.store.models import ReviewItemRecord, ReviewQueueRecord

__all__ = ["NewItem", "Queue", "QueueItem", "ReviewQueueStore"]


@dataclass(frozen=True)
class NewItem:
    """A row to give a reviewer, at ``position`` in their list."""

    row_index: int
    reviewer: str
    position: int
    probability: float
    stratum: int | None = None


@dataclass(frozen=True)
class QueueItem:
    row_index: int
    reviewer: str
    position: int
    probability: float
    stratum: int | None


@dataclass(frozen=True)
class Queue:
    id: int
    run_id: str
    metric: str
    rule: str
    options: dict[str, Any]
    eligible: int
    created_by: str | None
    created_at: datetime | None


def _queue(record: ReviewQueueRecord) -> Queue:
    return Queue(
        record.id,
        record.run_id,
        record.metric,
        record.rule,
        dict(record.options or {}),
        record.eligible,
        record.created_by,
        record.created_at,
    )


class ReviewQueueStore:
    """The review queues of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(
        self,
        run_id: str,
        metric: str,
        rule: str,
        options: dict[str, Any],
        eligible: int,
        items: Sequence[NewItem],
        created_by: str | None,
    ) -> Queue:
        """Keep a queue and its items in one transaction."""
        try:
            with self.store.session() as session:
                record = ReviewQueueRecord(
                    run_id=run_id,
                    metric=metric,
                    rule=rule,
                    options=options,
                    eligible=eligible,
                    created_by=created_by,
                )
                session.add(record)
                session.flush()
                session.add_all(
                    ReviewItemRecord(
                        queue_id=record.id,
                        row_index=item.row_index,
                        reviewer=item.reviewer,
                        position=item.position,
                        probability=item.probability,
                        stratum=item.stratum,
                    )
                    for item in items
                )
                session.commit()
                return _queue(record)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot keep a review queue of run {clip(run_id)}: {exc}") from exc

    def of_run(self, run_id: str) -> list[Queue]:
        """A run's queues, oldest first."""
        table = ReviewQueueRecord
        query = select(table).where(table.run_id == run_id).order_by(table.id)
        with self.store.session() as session:
            return [_queue(r) for r in session.scalars(query)]

    def get(self, run_id: str, queue_id: int) -> Queue:
        """One queue of a run (NotFoundError naming both otherwise)."""
        with self.store.session() as session:
            found = session.get(ReviewQueueRecord, queue_id)
            if found is None or found.run_id != run_id:
                raise NotFoundError(f"run '{clip(run_id)}' has no review queue {queue_id}")
            return _queue(found)

    def items(self, queue_id: int, reviewer: str | None = None) -> list[QueueItem]:
        """A queue's items (of one reviewer), by reviewer and place in their list."""
        table = ReviewItemRecord
        query = select(table).where(table.queue_id == queue_id)
        if reviewer is not None:
            query = query.where(table.reviewer == reviewer)
        query = query.order_by(table.reviewer, table.position)
        with self.store.session() as session:
            return [
                QueueItem(r.row_index, r.reviewer, r.position, r.probability, r.stratum)
                for r in session.scalars(query)
            ]
