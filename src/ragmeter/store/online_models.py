"""Tables of online evaluation rules: the rules made through the API, each rule's cursor
(the last trace it scored), and its daily budget ledger (judge requests and tokens spent per
UTC day), shared by every server replica of the store."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Float, Integer, String, func
from sqlalchemy.orm import Mapped, mapped_column

from ragmeter.store.actor import current_actor
from ragmeter.store.models import Base

__all__ = ["OnlineBudgetRecord", "OnlineCursorRecord", "OnlineRuleRecord"]


class OnlineRuleRecord(Base):
    """An online rule made through the API; ``spec`` is the rule (``ragmeter.config.OnlineRule``)
    as JSON. Rules of ``ragmeter.toml`` are not stored (the file is their source)."""

    __tablename__ = "online_rules"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: the user who made it (``store.actor``); NULL: made by the CLI
    created_by: Mapped[str | None] = mapped_column(
        String(200), nullable=True, default=current_actor
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(
        DateTime, server_default=func.now(), onupdate=func.now()
    )


class OnlineCursorRecord(Base):
    """How far a rule (of the API or of ``ragmeter.toml``, by name) has scored: the place in
    the trace store's order and id of the last trace it took, and the traces it scored in all."""

    __tablename__ = "online_cursors"

    rule: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: the last trace taken: its place in the source's order (``runs.online.Cursor``) and id
    position: Mapped[int] = mapped_column(BigInteger, default=0)
    trace_id: Mapped[str] = mapped_column(String(32), default="")
    scored: Mapped[int] = mapped_column(BigInteger, default=0)
    #: the server scoring the rule's next batch, and until when (Unix epoch s) it holds it
    owner: Mapped[str | None] = mapped_column(String(300), nullable=True)
    lease_until: Mapped[float] = mapped_column(Float, default=0.0)


class OnlineBudgetRecord(Base):
    """Judge requests and tokens a rule spent (reserved before each request) on one UTC day,
    and the traces it scored that day. Every replica reserves here, under the store's write
    lock, so that together they never pass the rule's budget."""

    __tablename__ = "online_budget"

    rule: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: the UTC day, ``YYYY-MM-DD``
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    requests: Mapped[int] = mapped_column(Integer, default=0)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    traces: Mapped[int] = mapped_column(Integer, default=0)
