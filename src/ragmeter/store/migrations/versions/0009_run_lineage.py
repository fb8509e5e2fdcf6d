"""run lineage and dataset versions: runs.name, note, archived and lineage, a run_tags table;
datasets.version and content_hash, a dataset's name unique per version instead of alone;
judge_cache.scripted (a reply of ragmeter's scripted judge)

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

#: how SQLite's unnamed UNIQUE (name) is found in batch mode (PostgreSQL names it itself)
_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _old_name_constraint() -> str:
    return "uq_datasets_name" if op.get_bind().dialect.name == "sqlite" else "datasets_name_key"


def upgrade() -> None:
    with op.batch_alter_table("datasets", naming_convention=_CONVENTION) as batch:
        batch.drop_constraint(_old_name_constraint(), type_="unique")
        batch.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("content_hash", sa.String(64), nullable=True))
        batch.create_unique_constraint("uq_datasets_name_version", ["name", "version"])
        batch.create_index("ix_datasets_name", ["name"])
        batch.create_index("ix_datasets_content_hash", ["content_hash"])
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("name", sa.String(200), nullable=True))
        batch.add_column(sa.Column("note", sa.Text(), nullable=False, server_default=""))
        batch.add_column(
            sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("lineage", sa.JSON(), nullable=False, server_default="{}"))
        batch.create_index("ix_runs_name", ["name"])
    op.create_table(
        "run_tags",
        sa.Column(
            "run_id",
            sa.String(64),
            sa.ForeignKey("runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("tag", sa.String(100), primary_key=True),
    )
    op.create_index("ix_run_tags_tag", "run_tags", ["tag"])
    with op.batch_alter_table("judge_cache") as batch:
        batch.add_column(
            sa.Column("scripted", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("judge_cache") as batch:
        batch.drop_column("scripted")
    op.drop_index("ix_run_tags_tag", "run_tags")
    op.drop_table("run_tags")
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_name")
        for column in ("lineage", "archived", "note", "name"):
            batch.drop_column(column)
    with op.batch_alter_table("datasets") as batch:
        batch.drop_index("ix_datasets_content_hash")
        batch.drop_index("ix_datasets_name")
        batch.drop_constraint("uq_datasets_name_version", type_="unique")
        batch.drop_column("content_hash")
        batch.drop_column("version")
        batch.create_unique_constraint("uq_datasets_name", ["name"])
