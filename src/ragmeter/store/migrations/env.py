"""Alembic environment: runs on the connection the store hands over (online mode only)."""

from __future__ import annotations

from typing import Any

from alembic import context

from ragmeter.store import alert_models, flag_models, online_models, trace_models  # noqa: F401
from ragmeter.store.alert_models import OPEN_EPISODE_INDEX
from ragmeter.store.models import Base


def _in_metadata(_obj: Any, name: str | None, kind: str, _reflected: bool, _other: Any) -> bool:
    """What autogenerate compares: all but the index a table's listener makes as SQL."""
    return not (kind == "index" and name == OPEN_EPISODE_INDEX)


connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    include_object=_in_metadata,
)
with context.begin_transaction():
    context.run_migrations()
