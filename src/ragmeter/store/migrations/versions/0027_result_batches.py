"""plain results (a score and nothing else) stored in columnar batches; row search keyed by
the run and the row (a plain result has no id of its own), its documents made again when a
run is next searched

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ragmeter.store.search import create_row_search, drop_row_search

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "result_batches",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("metric_name", sa.String(200), nullable=False),
        sa.Column("first_row", sa.Integer(), nullable=False),
        sa.Column("last_row", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("without_id", sa.Integer(), nullable=False),
        sa.Column("prediction_field", sa.String(40), nullable=True),
        sa.Column("contexts_field", sa.String(40), nullable=True),
        sa.Column("rows", sa.LargeBinary(), nullable=False),
        sa.Column("scores", sa.LargeBinary(), nullable=False),
        sa.Column("id_keys", sa.LargeBinary(), nullable=False),
        sa.Column("query_keys", sa.LargeBinary(), nullable=False),
    )
    op.create_index(
        "ix_result_batches_run_metric", "result_batches", ["run_id", "metric_name", "first_row"]
    )
    connection = op.get_bind()
    drop_row_search(connection)
    create_row_search(connection)


def downgrade() -> None:
    connection = op.get_bind()
    drop_row_search(connection)
    create_row_search(connection)  # (the search of this code: indexed again when searched)
    op.drop_index("ix_result_batches_run_metric", table_name="result_batches")
    op.drop_table("result_batches")
