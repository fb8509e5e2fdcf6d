"""judge cards: a judge model's agreement with people on a human-labelled suite

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_cards",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("judge_model", sa.String(300), nullable=False),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("prompt_code", sa.String(300), nullable=True),
        sa.Column("prompt_hash", sa.String(64), nullable=True),
        sa.Column("suite", sa.String(300), nullable=False),
        sa.Column("suite_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("card", sa.JSON(), nullable=False),
    )
    op.create_index("ix_judge_cards_model_metric", "judge_cards", ["judge_model", "metric", "id"])


def downgrade() -> None:
    op.drop_index("ix_judge_cards_model_metric", table_name="judge_cards")
    op.drop_table("judge_cards")
