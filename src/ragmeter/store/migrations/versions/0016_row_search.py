"""row search over the database's own text index: on SQLite an FTS5 table (trigram tokenizer)
over the first characters of each result's query, response and answer, kept by triggers on
``results`` deleted or changed; a run's results are indexed when it is first searched
(``ragmeter.store.search``)

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

from ragmeter.store.search import create_row_search, drop_row_search

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "sqlite":  # PostgreSQL's: revision 0018
        create_row_search(connection)  # runs are indexed when first searched


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "sqlite":
        drop_row_search(connection)
