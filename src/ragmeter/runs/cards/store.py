"""Judge cards in the store: kept once each, listed newest first, and the newest of a
(judge model, metric) found for the scores that judge made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import NotFoundError, StoreError
from ragmeter.store.db import Store
from ragmeter.store.models import JudgeCardRecord

__all__ = ["CardStore", "StoredCard"]

#: cards listed at most
MAX_LISTED = 500


@dataclass(frozen=True)
class StoredCard:
    """A kept card and what finds it."""

    id: int
    judge_model: str
    metric: str
    prompt_code: str | None
    prompt_hash: str | None
    suite: str
    suite_hash: str
    created_at: datetime | None
    created_by: str | None
    card: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "judge_model": self.judge_model,
            "metric": self.metric,
            "prompt_code": self.prompt_code,
            "prompt_hash": self.prompt_hash,
            "suite": self.suite,
            "suite_hash": self.suite_hash,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "created_by": self.created_by,
            "card": self.card,
        }


def _stored(record: JudgeCardRecord) -> StoredCard:
    return StoredCard(
        record.id,
        record.judge_model,
        record.metric,
        record.prompt_code,
        record.prompt_hash,
        record.suite,
        record.suite_hash,
        record.created_at,
        record.created_by,
        dict(record.card),
    )


class CardStore:
    """The judge cards of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def put(self, card: dict[str, Any]) -> StoredCard:
        """Keep ``card`` (as ``make_card`` built it); the stored card."""
        judge, suite = card["judge"], card["suite"]
        prompt = judge.get("prompt") or {}
        try:
            with self.store.session() as session:
                record = JudgeCardRecord(
                    judge_model=judge["model"],
                    metric=judge["metric"],
                    prompt_code=prompt.get("code"),
                    prompt_hash=prompt.get("hash"),
                    suite=suite["name"],
                    suite_hash=suite["content_hash"],
                    card=card,
                )
                session.add(record)
                session.commit()
                return _stored(record)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot keep the judge card: {exc}") from exc

    def get(self, card_id: int) -> StoredCard:
        with self.store.session() as session:
            record = session.get(JudgeCardRecord, card_id)
            if record is None:
                raise NotFoundError(f"no judge card {card_id}")
            return _stored(record)

    def list(
        self, *, judge_model: str | None = None, metric: str | None = None, limit: int = 100
    ) -> list[StoredCard]:
        """Cards newest first (of one judge model, one metric)."""
        table = JudgeCardRecord
        query = select(table)
        if judge_model is not None:
            query = query.where(table.judge_model == judge_model)
        if metric is not None:
            query = query.where(table.metric == metric)
        query = query.order_by(table.id.desc()).limit(max(1, min(limit, MAX_LISTED)))
        with self.store.session() as session:
            return [_stored(r) for r in session.scalars(query)]

    def newest(self, judge_model: str, metric: str) -> StoredCard | None:
        """The newest card of ``judge_model`` on ``metric``, or None."""
        found = self.list(judge_model=judge_model, metric=metric, limit=1)
        return found[0] if found else None
