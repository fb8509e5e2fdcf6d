"""Online rules made through the API, kept in the store, and every rule's cursor (how far it
has scored) with the lease a server holds while it scores the rule's next batch, so that
replicas sharing the store never score one batch twice and a restart neither rescores nor
skips a trace."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, insert, select, update

from ragmeter.config import OnlineRule
from ragmeter.errors import ConflictError, NotFoundError
from ragmeter.runs.online.source import Cursor
from ragmeter.store.db import Store
from ragmeter.store.locks import write_lock
from ragmeter.store.online_models import OnlineCursorRecord, OnlineRuleRecord

__all__ = ["RuleStore", "StoredRule"]

StoredRule = tuple[OnlineRule, str | None]  # the rule and who made it


class RuleStore:
    """The API's online rules and all rules' cursors in ``store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def list(self) -> list[StoredRule]:
        table = OnlineRuleRecord
        with self.store.session() as session:
            found = session.scalars(select(table).order_by(table.name)).all()
            return [(OnlineRule.model_validate(r.spec), r.created_by) for r in found]

    def get(self, name: str) -> StoredRule:
        with self.store.session() as session:
            found = session.get(OnlineRuleRecord, name)
            if found is None:
                raise NotFoundError(f"online rule '{name}' not found")
            return OnlineRule.model_validate(found.spec), found.created_by

    def create(self, rule: OnlineRule) -> None:
        with self.store.session() as session, session.begin():
            if session.get(OnlineRuleRecord, rule.name) is not None:
                raise ConflictError(f"online rule '{rule.name}' exists; choose another name")
            session.add(OnlineRuleRecord(name=rule.name, spec=_spec(rule)))
            session.execute(delete(OnlineCursorRecord).where(OnlineCursorRecord.rule == rule.name))

    def replace(self, rule: OnlineRule) -> None:
        with self.store.session() as session, session.begin():
            found = session.get(OnlineRuleRecord, rule.name)
            if found is None:
                raise NotFoundError(f"online rule '{rule.name}' not found")
            found.spec = _spec(rule)

    def delete(self, name: str) -> None:
        with self.store.session() as session, session.begin():
            found = session.get(OnlineRuleRecord, name)
            if found is None:
                raise NotFoundError(f"online rule '{name}' not found")
            session.delete(found)
            session.execute(delete(OnlineCursorRecord).where(OnlineCursorRecord.rule == name))

    # -- cursors -------------------------------------------------------------------------

    def claim(self, rule: str, owner: str, lease_s: float) -> Cursor | None:
        """The rule's cursor, now held by ``owner`` for ``lease_s`` seconds; None when another
        server holds it."""
        table = OnlineCursorRecord
        now = time.time()
        with self.store.engine.connect() as connection, connection.begin():
            write_lock(connection, f"ragmeter-online-cursor {rule}")
            found = connection.execute(select(table).where(table.rule == rule)).first()
            if found is None:
                connection.execute(
                    insert(table).values(
                        rule=rule, position=0, trace_id="", scored=0,
                        owner=owner, lease_until=now + lease_s,
                    )
                )  # fmt: skip
                return Cursor()
            if found.owner not in (None, owner) and found.lease_until > now:
                return None
            connection.execute(
                update(table)
                .where(table.rule == rule)
                .values(owner=owner, lease_until=now + lease_s)
            )
            return Cursor(found.position, found.trace_id)

    def renew(self, rule: str, owner: str, lease_s: float) -> bool:
        """Hold the rule's cursor ``lease_s`` seconds more; False if ``owner`` lost it."""
        table = OnlineCursorRecord
        with self.store.engine.begin() as connection:
            changed = connection.execute(
                update(table)
                .where(table.rule == rule, table.owner == owner)
                .values(lease_until=time.time() + lease_s)
            )
        return bool(changed.rowcount)

    def advance(self, rule: str, owner: str, cursor: Cursor | None, scored: int) -> None:
        """Move the rule's cursor to ``cursor`` (None: leave it) with ``scored`` more traces,
        and let go of it; nothing if ``owner`` no longer holds it."""
        table = OnlineCursorRecord
        values: dict[str, Any] = {
            "owner": None,
            "lease_until": 0.0,
            "scored": table.scored + scored,
        }
        if cursor is not None:
            values |= {"position": cursor.position, "trace_id": cursor.trace_id}
        with self.store.engine.begin() as connection:
            connection.execute(
                update(table).where(table.rule == rule, table.owner == owner).values(**values)
            )

    def scored(self) -> dict[str, int]:
        """Traces each rule has scored in all, by rule name."""
        table = OnlineCursorRecord
        with self.store.engine.connect() as connection:
            found = connection.execute(select(table.rule, table.scored)).all()
        return {rule: int(scored) for rule, scored in found}


def _spec(rule: OnlineRule) -> dict[str, Any]:
    return rule.model_dump(mode="json")
