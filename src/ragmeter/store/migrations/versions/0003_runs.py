"""datasets, runs and their results

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=True, unique=True),
        sa.Column("source", sa.String(1000), nullable=False),
        sa.Column("row_count", sa.Integer(), nullable=False),
        sa.Column("rows", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        sa.Column("scene_key", sa.String(16), nullable=False),
        sa.Column("scene_value", sa.String(200), nullable=True),
        sa.Column("dataset_id", sa.Integer(), sa.ForeignKey("datasets.id"), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("total_rows", sa.Integer(), nullable=False),
        sa.Column("done_rows", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("error_kind", sa.String(16), nullable=True),
        sa.Column("resumable", sa.Boolean(), nullable=False),
        sa.Column("owner", sa.String(300), nullable=True),
        sa.Column("usage", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_runs_dataset_id", "runs", ["dataset_id"])
    op.create_table(
        "results",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("row_index", sa.Integer(), nullable=False),
        sa.Column("metric_name", sa.String(200), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("passing", sa.Boolean(), nullable=True),
        sa.Column("feedback", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("prediction", sa.JSON(), nullable=True),
        sa.Column("contexts", sa.JSON(), nullable=True),
        sa.Column("prediction_cost", sa.Integer(), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("raw_dataset", sa.JSON(), nullable=False),
        sa.Column("cost", sa.JSON(), nullable=True),
        sa.UniqueConstraint("run_id", "row_index", "metric_name", name="uq_results_run_row_metric"),
    )
    op.create_index("ix_results_run_id", "results", ["run_id"])


def downgrade() -> None:
    op.drop_table("results")
    op.drop_table("runs")
    op.drop_table("datasets")
