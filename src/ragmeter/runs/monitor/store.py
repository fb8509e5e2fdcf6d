"""Alert rules and their episodes in the store. Opening and closing an episode are claims:
of the replicas evaluating a rule at once, one opens its episode (the database allows one
open episode per rule) and one closes it (an update of an open episode only), and only that
one sends the webhook."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from ragmeter.errors import ConflictError, NotFoundError, StoreError, clip
from ragmeter.store.alert_models import AlertEventRecord, AlertRuleRecord
from ragmeter.store.db import Store
from ragmeter.store.models import utc_now

__all__ = ["AlertEvent", "AlertStore", "StoredRule"]

#: the longest delivery outcome kept
_DELIVERY_CHARS = 500


@dataclass(frozen=True)
class StoredRule:
    id: int
    name: str
    expression: str
    webhook_url: str | None
    enabled: bool
    created_by: str | None
    created_at: datetime | None


@dataclass(frozen=True)
class AlertEvent:
    """One episode of a rule (``resolved_at`` None while it is open)."""

    id: int
    rule: str
    fired_at: datetime
    value: float
    n: int
    resolved_at: datetime | None
    resolved_value: float | None
    resolved_n: int | None
    fired_delivery: str | None
    resolved_delivery: str | None


def _rule(record: AlertRuleRecord) -> StoredRule:
    return StoredRule(
        record.id,
        record.name,
        record.expression,
        record.webhook_url,
        record.enabled,
        record.created_by,
        record.created_at,
    )


def _event(record: AlertEventRecord, rule: str) -> AlertEvent:
    return AlertEvent(
        record.id,
        rule,
        record.fired_at,
        record.value,
        record.n,
        record.resolved_at,
        record.resolved_value,
        record.resolved_n,
        record.fired_delivery,
        record.resolved_delivery,
    )


class AlertStore:
    """The alert rules and events of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, name: str, expression: str, webhook_url: str | None) -> StoredRule:
        """A new rule (checked by the caller); ConflictError when the name is taken."""
        record = AlertRuleRecord(
            name=name, expression=expression, webhook_url=webhook_url, enabled=True
        )
        try:
            with self.store.session() as session:
                session.add(record)
                session.commit()
        except IntegrityError:
            raise ConflictError(f"alert rule '{clip(name)}' already exists") from None
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store alert rule '{clip(name)}': {exc}") from exc
        return _rule(record)

    def rules(self, *, enabled_only: bool = False) -> list[StoredRule]:
        query = select(AlertRuleRecord).order_by(AlertRuleRecord.name)
        if enabled_only:
            query = query.where(AlertRuleRecord.enabled.is_(True))
        with self.store.session() as session:
            return [_rule(r) for r in session.scalars(query)]

    def get(self, name: str) -> StoredRule:
        with self.store.session() as session:
            record = session.scalars(
                select(AlertRuleRecord).where(AlertRuleRecord.name == name)
            ).first()
            if record is None:
                raise NotFoundError(f"no alert rule '{clip(name)}'")
            return _rule(record)

    def set_enabled(self, name: str, enabled: bool) -> StoredRule:
        with self.store.session() as session:
            changed = session.execute(
                update(AlertRuleRecord).where(AlertRuleRecord.name == name).values(enabled=enabled)
            )
            session.commit()
        if not changed.rowcount:  # type: ignore[attr-defined]
            raise NotFoundError(f"no alert rule '{clip(name)}'")
        return self.get(name)

    def delete(self, name: str) -> None:
        """Delete a rule and its events."""
        rule = self.get(name)
        with self.store.session() as session:
            session.execute(delete(AlertEventRecord).where(AlertEventRecord.rule_id == rule.id))
            session.execute(delete(AlertRuleRecord).where(AlertRuleRecord.id == rule.id))
            session.commit()

    def events(self, *, rule: str | None = None, limit: int = 100) -> list[AlertEvent]:
        """Episodes, newest first (of one rule if named)."""
        query = (
            select(AlertEventRecord, AlertRuleRecord.name)
            .join(AlertRuleRecord, AlertRuleRecord.id == AlertEventRecord.rule_id)
            .order_by(AlertEventRecord.fired_at.desc(), AlertEventRecord.id.desc())
            .limit(limit)
        )
        if rule is not None:
            query = query.where(AlertRuleRecord.name == rule)
        with self.store.session() as session:
            return [_event(record, name) for record, name in session.execute(query)]

    def open_episode(self, rule_id: int) -> int | None:
        """The id of the rule's open episode, if one is open."""
        with self.store.session() as session:
            return session.scalars(
                select(AlertEventRecord.id).where(
                    AlertEventRecord.rule_id == rule_id, AlertEventRecord.resolved_at.is_(None)
                )
            ).first()

    def claim_fire(self, rule_id: int, value: float, n: int) -> int | None:
        """Open an episode of the rule: its id, or None when one is open already (another
        replica opened it first)."""
        record = AlertEventRecord(rule_id=rule_id, fired_at=utc_now(), value=value, n=n)
        try:
            with self.store.session() as session:
                session.add(record)
                session.commit()
        except IntegrityError:  # the one open episode the index allows exists
            return None
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open an alert episode: {exc}") from exc
        return record.id

    def claim_resolve(self, event_id: int, value: float | None, n: int) -> bool:
        """Close an open episode; False when it was closed already (by another replica)."""
        with self.store.session() as session:
            changed = session.execute(
                update(AlertEventRecord)
                .where(AlertEventRecord.id == event_id, AlertEventRecord.resolved_at.is_(None))
                .values(resolved_at=utc_now(), resolved_value=value, resolved_n=n)
            )
            session.commit()
        return bool(changed.rowcount)  # type: ignore[attr-defined]

    def delivered(self, event_id: int, outcome: str, *, resolved: bool = False) -> None:
        """Note what a webhook delivery of the episode gave."""
        column = "resolved_delivery" if resolved else "fired_delivery"
        with self.store.session() as session:
            session.execute(
                update(AlertEventRecord)
                .where(AlertEventRecord.id == event_id)
                .values({column: outcome[:_DELIVERY_CHARS]})
            )
            session.commit()
