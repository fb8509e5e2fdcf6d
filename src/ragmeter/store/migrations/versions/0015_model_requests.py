"""requests sent to a model with a request rate, shared by every process of the store (the
servers of a team), so together they never pass the model's requests_per_minute

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_requests",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("model_key", sa.String(700), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
    )
    op.create_index("ix_model_requests_model_at", "model_requests", ["model_key", "at"])


def downgrade() -> None:
    op.drop_index("ix_model_requests_model_at", table_name="model_requests")
    op.drop_table("model_requests")
