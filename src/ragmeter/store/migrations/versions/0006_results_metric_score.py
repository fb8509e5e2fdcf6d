"""a run's results by metric and score: ix_results_run_metric_score, so a page of a run's rows
sorted or filtered by one metric's score reads an index, not every result

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_results_run_metric_score", "results", ["run_id", "metric_name", "score"])


def downgrade() -> None:
    op.drop_index("ix_results_run_metric_score", table_name="results")
