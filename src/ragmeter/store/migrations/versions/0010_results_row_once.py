"""a result's row stored once: results.raw_dataset may be NULL, meaning the run's dataset row
at the result's row_index (``dataset_rows``); the copies of results stored before that equal
that row (the same JSON text) are set NULL here, the others (rows a target filled) are kept.
Results are written in bulk: the two pair-key indexes (sorted by a hash, so every insert
lands at a random place) become one covering index in row order, and the index on run_id
alone goes (the unique constraint's index leads with it)

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_RESULTS = sa.table(
    "results",
    sa.column("run_id", sa.String()),
    sa.column("row_index", sa.Integer()),
    sa.column("raw_dataset", sa.Text()),
)
_RUNS = sa.table("runs", sa.column("id", sa.String()), sa.column("dataset_id", sa.Integer()))
_ROWS = sa.table(
    "dataset_rows",
    sa.column("dataset_id", sa.Integer()),
    sa.column("position", sa.Integer()),
    sa.column("data", sa.Text()),
)


def _forget_copies() -> None:
    """NULL every result's row that is its dataset row, text for text (one UPDATE)."""
    same = (
        sa.select(sa.literal(1))
        .select_from(_RUNS.join(_ROWS, _ROWS.c.dataset_id == _RUNS.c.dataset_id))
        .where(
            _RUNS.c.id == _RESULTS.c.run_id,
            _ROWS.c.position == _RESULTS.c.row_index,
            _ROWS.c.data == sa.cast(_RESULTS.c.raw_dataset, sa.Text()),
        )
    )
    op.get_bind().execute(_RESULTS.update().where(sa.exists(same)).values(raw_dataset=sa.null()))


def _fill_copies() -> None:
    """Each NULL row back as a copy of its dataset row (the downgrade)."""
    row = (
        sa.select(_ROWS.c.data)
        .select_from(_RUNS.join(_ROWS, _ROWS.c.dataset_id == _RUNS.c.dataset_id))
        .where(_RUNS.c.id == _RESULTS.c.run_id, _ROWS.c.position == _RESULTS.c.row_index)
        .scalar_subquery()
    )
    value: sa.ColumnElement[str] = sa.func.coalesce(row, "{}")
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":  # SQLite keeps JSON as text; CAST AS JSON means a number
        value = sa.cast(value, sa.JSON())
    bind.execute(
        _RESULTS.update().where(_RESULTS.c.raw_dataset.is_(None)).values(raw_dataset=value)
    )


_PAIR_KEYS = ("id_key", "query_key")
_ROW_INDEX = ["run_id", "metric_name", "row_index", "score", "id_key", "query_key"]


def upgrade() -> None:
    for key in _PAIR_KEYS:
        op.drop_index(f"ix_results_run_metric_{key}", table_name="results")
    op.drop_index("ix_results_run_id", table_name="results")
    with op.batch_alter_table("results") as batch:
        batch.alter_column("raw_dataset", existing_type=sa.JSON(), nullable=True)
    _forget_copies()
    op.create_index("ix_results_run_metric_row", "results", _ROW_INDEX)


def downgrade() -> None:
    op.drop_index("ix_results_run_metric_row", table_name="results")
    _fill_copies()
    with op.batch_alter_table("results") as batch:
        batch.alter_column("raw_dataset", existing_type=sa.JSON(), nullable=False)
    op.create_index("ix_results_run_id", "results", ["run_id"])
    for key in _PAIR_KEYS:
        op.create_index(
            f"ix_results_run_metric_{key}",
            "results",
            ["run_id", "metric_name", key, "row_index", "score"],
        )
