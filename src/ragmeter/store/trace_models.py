"""Tables of production traces: a trace summed up as one row (``traces``), the spans it was
made of (``spans``) and the scores online rules or people gave it (``trace_scores``). Times
of the app's spans are Unix epoch nanoseconds, as OTLP sends them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from ragmeter.store.models import Base

__all__ = ["SpanRow", "TraceRow", "TraceScoreRow"]


class TraceRow(Base):
    """One trace as its spans so far sum it up (``ragmeter.traces.TraceRecord``): kept up to
    date as spans arrive. ``seq`` grows with every change of any trace (taken under the
    store's write lock, so a reader that saw ``seq`` N has seen every change up to N): what
    online rules read new and changed traces after."""

    __tablename__ = "traces"
    __table_args__ = (
        Index("ix_traces_start", "start_ns"),
        Index("ix_traces_service_start", "service", "start_ns"),
        Index("ix_traces_seq", "seq"),
    )

    trace_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    service: Mapped[str | None] = mapped_column(String(200), nullable=True)
    name: Mapped[str] = mapped_column(String(500), default="")
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(8))
    complete: Mapped[bool] = mapped_column(Boolean)
    #: the row fields the spans gave (query, response, retrieved_contexts, ...)
    row: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: the row's query as text, for a search by text (the row's JSON is not searched)
    query: Mapped[str | None] = mapped_column(Text, nullable=True)
    model: Mapped[str | None] = mapped_column(String(300), nullable=True)
    input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    session_id: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)
    user_id: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)
    span_count: Mapped[int] = mapped_column(Integer, default=0)
    received_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    seq: Mapped[int] = mapped_column(BigInteger)


class SpanRow(Base):
    """One span of a trace as exported (``ragmeter.traces.SpanRecord``), kept once per
    (trace, span): a span sent again is ignored."""

    __tablename__ = "spans"

    trace_id: Mapped[str] = mapped_column(
        ForeignKey("traces.trace_id", ondelete="CASCADE"), primary_key=True
    )
    span_id: Mapped[str] = mapped_column(String(16), primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    name: Mapped[str] = mapped_column(String(500))
    kind: Mapped[str] = mapped_column(String(40))
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(8))
    status_message: Mapped[str | None] = mapped_column(Text, nullable=True)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON)
    resource: Mapped[dict[str, Any]] = mapped_column(JSON)
    events: Mapped[list[Any]] = mapped_column(JSON)


class TraceScoreRow(Base):
    """One metric's score of a trace by one rule (``rule`` "" for a score given by no rule),
    replaced when the rule scores the trace again (``ragmeter.traces.TraceScore``). Read by
    metric over time (the monitor) and by trace (a trace's scores); the unique constraint's
    index serves the second."""

    __tablename__ = "trace_scores"
    __table_args__ = (
        UniqueConstraint("trace_id", "metric", "rule", name="uq_trace_scores_trace_metric_rule"),
        Index("ix_trace_scores_metric_scored", "metric", "scored_ns"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trace_id: Mapped[str] = mapped_column(ForeignKey("traces.trace_id", ondelete="CASCADE"))
    metric: Mapped[str] = mapped_column(String(200))
    rule: Mapped[str] = mapped_column(String(200), default="")
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    passing: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    error_kind: Mapped[str | None] = mapped_column(String(16), nullable=True)
    feedback: Mapped[str | None] = mapped_column(Text, nullable=True)
    judge_model: Mapped[str | None] = mapped_column(String(300), nullable=True)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    #: when it was scored, Unix epoch nanoseconds
    scored_ns: Mapped[int] = mapped_column(BigInteger)
