"""row search over PostgreSQL's own text index: a table of each indexed result's capped texts
(deleted with the result, redone by a trigger when it changes) and a GIN trigram index of
them (``pg_trgm``); when the extension cannot be created the rest is made and searches scan
each run's capped texts (``ragmeter.store.search``). Nothing on SQLite (revision 0016 made
its FTS5 index)

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from alembic import op

from ragmeter.store.search import create_row_search, drop_row_search

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        create_row_search(connection)  # runs are indexed when first searched


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        drop_row_search(connection)
