"""Tables of alert rules and their episodes (``runs.monitor``): a rule's condition on a
metric of production traces, and each time it fired and resolved. At most one episode of a
rule is open (not resolved) at a time, which the database enforces (a partial unique
index): replicas evaluating the same rule at once fire it once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    event,
    func,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from ragmeter.store.actor import current_actor
from ragmeter.store.models import Base, utc_now

__all__ = ["OPEN_EPISODE_INDEX", "AlertEventRecord", "AlertRuleRecord"]

#: the partial unique index of open episodes, made as SQL (below), not by the metadata
OPEN_EPISODE_INDEX = "uq_alert_events_open"


class AlertRuleRecord(Base):
    """An alert rule: its name, its expression (``faithfulness.mean < 0.8 over 1h with n >=
    50``), where it posts (a webhook URL, optional), whether it is evaluated, who made it."""

    __tablename__ = "alert_rules"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    expression: Mapped[str] = mapped_column(String(500))
    webhook_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), default=utc_now
    )


class AlertEventRecord(Base):
    """One episode of a rule: when its condition became true (with the value and n then),
    when it became false again (None while open), and what each webhook delivery gave."""

    __tablename__ = "alert_events"
    __table_args__ = (Index("ix_alert_events_rule_fired", "rule_id", "fired_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    rule_id: Mapped[int] = mapped_column(ForeignKey("alert_rules.id", ondelete="CASCADE"))
    fired_at: Mapped[datetime] = mapped_column(DateTime)
    value: Mapped[float] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    resolved_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    resolved_n: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: the firing webhook's outcome ("sent: HTTP 200", "failed: ...", "no webhook")
    fired_delivery: Mapped[str | None] = mapped_column(String(500), nullable=True)
    resolved_delivery: Mapped[str | None] = mapped_column(String(500), nullable=True)


#: one open episode per rule: a partial unique index, the same SQL on SQLite and PostgreSQL
#: (migration 0025 made it). Written as DDL, not as an Index with ``postgresql_where``: that
#: keyword loads SQLAlchemy's PostgreSQL dialect as this module is imported, a twentieth of a
#: second of the first run into a new SQLite store.
def _open_episode_index(_table: Any, connection: Connection, **_kw: Any) -> None:
    connection.exec_driver_sql(
        f"CREATE UNIQUE INDEX {OPEN_EPISODE_INDEX} ON alert_events (rule_id) "
        "WHERE resolved_at IS NULL"
    )


event.listen(AlertEventRecord.__table__, "after_create", _open_episode_index)
