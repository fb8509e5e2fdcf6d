"""Alembic environment: runs on the connection the store hands over (online mode only)."""

from __future__ import annotations

from alembic import context

from ragmeter.store import alert_models, flag_models, online_models, trace_models  # noqa: F401
from ragmeter.store.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
