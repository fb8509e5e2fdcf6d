"""a dataset version's file key: the hash of the file its rows were read from, so running
the same file again finds its version without hashing every row

Revision ID: 0028
Revises: 0027
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("file_key", sa.String(64), nullable=True))
        batch.create_index("ix_datasets_file_key", ["file_key"])


def downgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.drop_index("ix_datasets_file_key")
        batch.drop_column("file_key")
