"""Judge cards in the store: kept once each, listed newest first, the newest of a (judge
model, metric) found for the scores that judge made, and a card's statistics and headline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import NotFoundError, StoreError
from ragmeter.store.db import Store
from ragmeter.store.models import JudgeCardRecord

__all__ = [
    "STATISTICS",
    "CardStore",
    "StoredCard",
    "card_statistic",
    "headline",
    "judge_model_of",
]

#: a rule's statistic -> the card's name of it (``kappa``: Cohen's, or the weighted one)
STATISTICS = {
    "kappa": ("cohen_kappa", "weighted_kappa"),
    "balanced_accuracy": ("balanced_accuracy",),
    "f1": ("f1",),
    "accuracy": ("accuracy",),
    "spearman": ("spearman",),
}
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


def card_statistic(card: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The overall statistic ``name`` of a stored card (``kappa`` is Cohen's for a binary
    suite, the quadratic-weighted one for a graded one), or None."""
    statistics = card.get("agreement", {}).get("all", {}).get("statistics", [])
    for wanted in STATISTICS.get(name, (name,)):
        for stat in statistics:
            if stat.get("name") == wanted:
                return dict(stat)
    return None


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def headline(card: dict[str, Any], *, prefix: str = "judge card: ") -> str:
    """``judge card: κ 0.41 [0.33, 0.49], n 817, ragtruth``."""
    stat = card_statistic(card, "kappa")
    suite = card.get("suite", {}).get("name", "?")
    if stat is None:
        return f"{prefix}no kappa, {suite}"
    symbol = "weighted κ" if stat["name"] == "weighted_kappa" else "κ"
    return (
        f"{prefix}{symbol} {_number(stat['value'])} [{_number(stat['low'])}, "
        f"{_number(stat['high'])}], n {stat['n']}, {suite}"
    )


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

    def of_metrics(self, judge_model: str | None, metrics: Sequence[str]) -> dict[str, StoredCard]:
        """The newest card of ``judge_model`` on each of ``metrics`` that has one."""
        if not judge_model:
            return {}
        found = {name: self.newest(judge_model, name) for name in metrics}
        return {name: card for name, card in found.items() if card is not None}


def judge_model_of(lineage: dict[str, Any] | None) -> str | None:
    """The judge model a run's lineage names (None: no judge)."""
    model = ((lineage or {}).get("judge") or {}).get("model")
    return str(model) if model else None
