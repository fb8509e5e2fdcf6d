"""Named records (spaces, apps): valid names, unique inserts, lookup by name or id; and the
LIKE pattern of a text search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from ragmeter.errors import ConflictError, NotFoundError, StoreError, clip
from ragmeter.store.names import key_text

if TYPE_CHECKING:
    from ragmeter.store.db import Store

__all__ = [
    "MAX_STORED_INT",
    "SHOWN_NAMES",
    "add_named",
    "by_name_or_id",
    "insert_unique",
    "is_id",
    "known_names",
    "next_version",
    "split_version",
]

R = TypeVar("R")

#: names a "not found" message lists at most: enough to spot a typo, never the whole table
SHOWN_NAMES = 20


#: the largest number a store's integer columns (ids, row numbers, versions) hold on every
#: store: PostgreSQL's ``integer`` is 32 bits (SQLite's 64), and a larger number compared with
#: one fails the whole query there, so none may reach one
MAX_STORED_INT = 2**31 - 1


def is_id(text: str) -> bool:
    """Whether ``text`` is a record id: ASCII digits only ("²" is a digit to ``isdigit``),
    at most ``MAX_STORED_INT`` (a larger number is a name: not found)."""
    return text.isascii() and text.isdigit() and len(text) <= 10 and int(text) <= MAX_STORED_INT


def known_names(session: Session, column: Any, hint: str) -> str:
    """The first ``SHOWN_NAMES`` values of ``column`` (a name or code), then how many more,
    for a "not found" message; ``hint`` on how to make one when there are none."""
    named = column.is_not(None)
    query = select(column).where(named).order_by(column).limit(SHOWN_NAMES)
    names = [name[:60] for name in session.scalars(query).all()]
    if not names:
        return f"none yet ({hint})"
    total = session.scalar(select(func.count()).where(named)) or 0
    more = f" and {total - len(names)} more" if total > len(names) else ""
    return ", ".join(names) + more


def by_name_or_id(
    session: Session,
    model: type[R],
    key: str | int,
    *,
    what: str,
    hint: str,
    options: Sequence[Any] = (),
) -> R:
    """The ``model`` row whose id (all digits) or name is ``key``, loaded with ``options``
    (such as a deferred column); NotFoundError listing some known names, or ``hint`` on how
    to make one when there are none."""
    table: Any = model  # a declarative model with ``id`` and ``name`` columns
    text = key_text(key)
    column, value = (table.id, int(text)) if is_id(text) else (table.name, text)
    query = select(table).where(column == value).options(*options)
    record: R | None = session.scalars(query).first()
    if record is None:
        raise NotFoundError(
            f"no {what} '{clip(text)}'; known: {known_names(session, table.name, hint)}"
        )
    return record


def split_version(key: str | int, what: str) -> tuple[str, int | None]:
    """``NAME@V`` as (NAME, V); a plain name or id (which cannot hold "@") as (it, None).
    A version is a whole number from 1, else NotFoundError naming ``what``."""
    text = str(key)
    name, at, version = text.partition("@")
    if not at:
        return text, None
    if not is_id(version) or int(version) < 1:
        raise NotFoundError(f"no {what} '{clip(text)}': a version is a whole number from 1")
    return name, int(version)


def next_version(session: Session, version: Any, key_column: Any, key: str) -> int:
    """One past the newest ``version`` (a column of a versions table) the row ``key_column
    == key`` ever had; 1 for a new one. Versions are kept after their object is removed, so
    a name removed and added again goes on counting."""
    newest = session.scalar(select(func.max(version)).where(key_column == key))
    return int(newest or 0) + 1


def insert_unique(store: Store, record: Any, what: str, key: str, kind: str = "name") -> None:
    """Insert ``record``; ConflictError when its unique ``key`` (a name or id) is taken."""
    try:
        with store.session() as session:
            session.add(record)
            session.commit()
    except IntegrityError:
        raise ConflictError(f"{what} '{key}' already exists; choose another {kind}") from None
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot store {what} '{key}': {exc}") from exc


def add_named(store: Store, record: Any, what: str) -> None:
    """Insert a record with a unique ``name``; ConflictError if the name is taken."""
    insert_unique(store, record, what, record.name)
