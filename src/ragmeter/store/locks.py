"""A lock that processes sharing a store take turns through, for the rest of a transaction."""

from __future__ import annotations

from sqlalchemy import Connection, text

__all__ = ["write_lock"]


def write_lock(connection: Connection, name: str) -> None:
    """Take, for the rest of ``connection``'s transaction (begun, nothing run in it yet), the
    lock ``name``: SQLite's write lock at once (``BEGIN IMMEDIATE``; others wait up to the
    connection's timeout), PostgreSQL's advisory lock for ``name``. Processes sharing the
    store take turns through it."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    elif dialect == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": name})
