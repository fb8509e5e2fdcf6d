"""alert rules on production traces' metrics, and their episodes (fired, resolved)

Revision ID: 0025
Revises: 0022 (0024 once the trace store's 0023 and online rules' 0024 are merged)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

_OPEN = sa.text("resolved_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "alert_rules",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("expression", sa.String(500), nullable=False),
        sa.Column("webhook_url", sa.String(2000), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
    )
    op.create_table(
        "alert_events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "rule_id",
            sa.Integer(),
            sa.ForeignKey("alert_rules.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("fired_at", sa.DateTime(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("resolved_at", sa.DateTime(), nullable=True),
        sa.Column("resolved_value", sa.Float(), nullable=True),
        sa.Column("resolved_n", sa.Integer(), nullable=True),
        sa.Column("fired_delivery", sa.String(500), nullable=True),
        sa.Column("resolved_delivery", sa.String(500), nullable=True),
    )
    op.create_index(
        "uq_alert_events_open",
        "alert_events",
        ["rule_id"],
        unique=True,
        sqlite_where=_OPEN,
        postgresql_where=_OPEN,
    )
    op.create_index("ix_alert_events_rule_fired", "alert_events", ["rule_id", "fired_at"])


def downgrade() -> None:
    op.drop_index("ix_alert_events_rule_fired", table_name="alert_events")
    op.drop_index("uq_alert_events_open", table_name="alert_events")
    op.drop_table("alert_events")
    op.drop_table("alert_rules")
