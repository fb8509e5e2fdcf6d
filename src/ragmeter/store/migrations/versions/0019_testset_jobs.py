"""test set generations in the store, so every server sharing it shows and cancels them

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "testset_jobs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=True),
        sa.Column("dataset_name", sa.String(200), nullable=True),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("owner", sa.String(300), nullable=True),
        sa.Column("lease_until", sa.DateTime(), nullable=True),
        sa.Column("cancel_asked", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("ix_testset_jobs_state", "testset_jobs", ["state"])
    op.create_index("ix_testset_jobs_dataset_id", "testset_jobs", ["dataset_id"])


def downgrade() -> None:
    op.drop_index("ix_testset_jobs_dataset_id", table_name="testset_jobs")
    op.drop_index("ix_testset_jobs_state", table_name="testset_jobs")
    op.drop_table("testset_jobs")
