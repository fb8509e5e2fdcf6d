"""production traces: traces, their spans and their scores

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "traces",
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("service", sa.String(200), nullable=True),
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("start_ns", sa.BigInteger(), nullable=False),
        sa.Column("end_ns", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("row", sa.JSON(), nullable=False),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("model", sa.String(300), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("session_id", sa.String(200), nullable=True),
        sa.Column("user_id", sa.String(200), nullable=True),
        sa.Column("span_count", sa.Integer(), nullable=False),
        sa.Column("received_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_traces_start", "traces", ["start_ns"])
    op.create_index("ix_traces_service_start", "traces", ["service", "start_ns"])
    op.create_index("ix_traces_seq", "traces", ["seq"])
    op.create_index("ix_traces_session_id", "traces", ["session_id"])
    op.create_index("ix_traces_user_id", "traces", ["user_id"])
    op.create_table(
        "spans",
        sa.Column(
            "trace_id",
            sa.String(32),
            sa.ForeignKey("traces.trace_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("span_id", sa.String(16), primary_key=True),
        sa.Column("parent_id", sa.String(16), nullable=True),
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("start_ns", sa.BigInteger(), nullable=False),
        sa.Column("end_ns", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("status_message", sa.Text(), nullable=True),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.Column("resource", sa.JSON(), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
    )
    op.create_table(
        "trace_scores",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "trace_id",
            sa.String(32),
            sa.ForeignKey("traces.trace_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("rule", sa.String(200), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("passing", sa.Boolean(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("error_kind", sa.String(16), nullable=True),
        sa.Column("feedback", sa.Text(), nullable=True),
        sa.Column("judge_model", sa.String(300), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("scored_ns", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("trace_id", "metric", "rule", name="uq_trace_scores_trace_metric_rule"),
    )
    op.create_index("ix_trace_scores_metric_scored", "trace_scores", ["metric", "scored_ns"])


def downgrade() -> None:
    op.drop_index("ix_trace_scores_metric_scored", table_name="trace_scores")
    op.drop_table("trace_scores")
    op.drop_table("spans")
    for index in ("user_id", "session_id", "seq", "service_start", "start"):
        op.drop_index(f"ix_traces_{index}", table_name="traces")
    op.drop_table("traces")
