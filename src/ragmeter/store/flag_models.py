"""Reviewers' flags on production traces (``trace_flags``): one flag per trace and user, with
a label from a small fixed set and an optional note; a trace's flags go with it (retention)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from ragmeter.store.models import Base

__all__ = ["TraceFlagRow"]


class TraceFlagRow(Base):
    """One user's flag of one trace (``ragmeter.runs.storage.trace_flags.TraceFlag``): a new
    flag by the same user replaces it. Read by trace (the unique constraint's index) and by
    label (a list of flagged traces)."""

    __tablename__ = "trace_flags"
    __table_args__ = (
        UniqueConstraint("trace_id", "user_name", name="uq_trace_flags_trace_user"),
        Index("ix_trace_flags_label", "label"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trace_id: Mapped[str] = mapped_column(ForeignKey("traces.trace_id", ondelete="CASCADE"))
    user_name: Mapped[str] = mapped_column(String(200))
    label: Mapped[str] = mapped_column(String(40))
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
