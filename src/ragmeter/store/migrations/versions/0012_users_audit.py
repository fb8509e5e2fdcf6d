"""users and an audit log: a ``users`` table (name, role, the SHA-256 of its key and the
key's first characters to find it, disabled, created_at), an ``audit_log`` table (who, what,
when, on what, ids before and after), and ``created_by`` on runs, datasets, spaces, apps and
prompts (NULL for what was made before)

Revision ID: 0012
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0010"
branch_labels = None
depends_on = None

_OWNED = ("runs", "datasets", "spaces", "apps", "prompts")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("key_prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime(), nullable=False, server_default=sa.func.now()),
    )
    op.create_index("ix_users_key_prefix", "users", ["key_prefix"])
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(), nullable=False, server_default=sa.func.now()),
        sa.Column("user_name", sa.String(200), nullable=False),
        sa.Column("action", sa.String(300), nullable=False),
        sa.Column("object_kind", sa.String(32), nullable=False),
        sa.Column("object_id", sa.String(300), nullable=True),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    op.create_index("ix_audit_log_user_name", "audit_log", ["user_name"])
    for table in _OWNED:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("created_by", sa.String(200), nullable=True))


def downgrade() -> None:
    for table in _OWNED:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("created_by")
    op.drop_index("ix_audit_log_user_name", table_name="audit_log")
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_table("audit_log")
    op.drop_index("ix_users_key_prefix", table_name="users")
    op.drop_table("users")
