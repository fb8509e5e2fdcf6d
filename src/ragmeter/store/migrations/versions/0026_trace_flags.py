"""reviewers' flags on production traces

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trace_flags",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "trace_id",
            sa.String(32),
            sa.ForeignKey("traces.trace_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("user_name", sa.String(200), nullable=False),
        sa.Column("label", sa.String(40), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
        sa.UniqueConstraint("trace_id", "user_name", name="uq_trace_flags_trace_user"),
    )
    op.create_index("ix_trace_flags_label", "trace_flags", ["label"])


def downgrade() -> None:
    op.drop_index("ix_trace_flags_label", table_name="trace_flags")
    op.drop_table("trace_flags")
