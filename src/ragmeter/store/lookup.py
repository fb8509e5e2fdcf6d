"""Finding a record by name or by id, as every command that takes ``NAME`` does."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from ragmeter.errors import NotFoundError

__all__ = ["by_name_or_id"]

R = TypeVar("R")


def by_name_or_id(session: Session, model: type[R], key: str | int, *, what: str, hint: str) -> R:
    """The ``model`` row whose id (all digits) or name is ``key``; NotFoundError listing the
    known names, or ``hint`` on how to make one when there are none."""
    table: Any = model  # a declarative model with ``id`` and ``name`` columns
    text = str(key).strip()
    column, value = (table.id, int(text)) if text.isdigit() else (table.name, text)
    record: R | None = session.scalars(select(table).where(column == value)).first()
    if record is None:
        names = session.scalars(select(table.name).order_by(table.name)).all()
        known = ", ".join(names) or f"none yet ({hint})"
        raise NotFoundError(f"no {what} '{text}'; known: {known}")
    return record
