"""online evaluation rules: the rules made through the API, each rule's cursor, and the
daily budget ledger (judge requests and tokens per rule and UTC day) shared by replicas

Revision ID: 0024
Revises: 0022 (until 0023, the trace tables, is merged; then 0023)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "online_rules",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
    )
    op.create_table(
        "online_cursors",
        sa.Column("rule", sa.String(64), primary_key=True),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("scored", sa.BigInteger(), nullable=False),
        sa.Column("owner", sa.String(300), nullable=True),
        sa.Column("lease_until", sa.Float(), nullable=False),
    )
    op.create_table(
        "online_budget",
        sa.Column("rule", sa.String(64), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("traces", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("online_budget")
    op.drop_table("online_cursors")
    op.drop_table("online_rules")
