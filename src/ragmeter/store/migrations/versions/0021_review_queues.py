"""review queues: rows of a run picked for people to label, and who labels each

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_queues",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("rule", sa.String(32), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("eligible", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("ix_review_queues_run_id", "review_queues", ["run_id"])
    op.create_table(
        "review_items",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "queue_id",
            sa.Integer(),
            sa.ForeignKey("review_queues.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("row_index", sa.Integer(), nullable=False),
        sa.Column("reviewer", sa.String(200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("probability", sa.Float(), nullable=False),
        sa.Column("stratum", sa.Integer(), nullable=True),
        sa.UniqueConstraint("queue_id", "reviewer", "row_index", name="uq_review_items_row"),
    )
    op.create_index(
        "ix_review_items_reviewer", "review_items", ["queue_id", "reviewer", "position"]
    )


def downgrade() -> None:
    op.drop_index("ix_review_items_reviewer", table_name="review_items")
    op.drop_table("review_items")
    op.drop_index("ix_review_queues_run_id", table_name="review_queues")
    op.drop_table("review_queues")
