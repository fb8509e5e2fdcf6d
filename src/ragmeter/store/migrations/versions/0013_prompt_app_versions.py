"""prompts and apps have versions: editing one makes a new version, every version is kept
(``prompt_versions``, ``app_versions``, by code or name), and the prompt or app says which
version it is now. What is stored becomes version 1.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("prompts", "apps"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
    op.create_table(
        "prompt_versions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("code", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("language", sa.String(8), nullable=True),
        sa.Column("template", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
        sa.UniqueConstraint("code", "version", name="uq_prompt_versions_code_version"),
    )
    op.create_table(
        "app_versions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), server_default=sa.func.now(), nullable=False),
        sa.UniqueConstraint("name", "version", name="uq_app_versions_name_version"),
    )
    op.execute(
        "INSERT INTO prompt_versions (code, version, kind, language, template, description, "
        "created_at) SELECT code, 1, kind, language, template, description, updated_at "
        "FROM prompts"
    )
    op.execute(
        "INSERT INTO app_versions (name, version, kind, config, created_at) "
        "SELECT name, 1, kind, config, updated_at FROM apps"
    )


def downgrade() -> None:
    op.drop_table("app_versions")
    op.drop_table("prompt_versions")
    for table in ("apps", "prompts"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("version")
