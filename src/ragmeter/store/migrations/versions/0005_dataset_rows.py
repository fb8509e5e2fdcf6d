"""a dataset's rows one per row: dataset_rows, moved out of the datasets.rows array

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

from ragmeter.store.db import to_json

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

#: rows written per INSERT (executemany)
_BATCH = 5000

_datasets = sa.table("datasets", sa.column("id", sa.Integer()), sa.column("rows", sa.JSON()))
_rows = sa.table(
    "dataset_rows",
    sa.column("dataset_id", sa.Integer()),
    sa.column("position", sa.Integer()),
    sa.column("data", sa.Text()),
)


def _batches(items: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for item in items:
        batch.append(item)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _array(value: Any) -> list[Any]:
    """A stored array as a list: text on SQLite (Python's reader takes the NaN that older
    stores hold), already a list where the driver parses JSON."""
    return list(json.loads(value) if isinstance(value, str | bytes) else value or [])


def upgrade() -> None:
    op.create_table(
        "dataset_rows",
        sa.Column(
            "dataset_id",
            sa.Integer(),
            sa.ForeignKey("datasets.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer(), primary_key=True),
        sa.Column("data", sa.Text(), nullable=False),
    )
    bind = op.get_bind()
    ids = bind.execute(sa.select(_datasets.c.id).order_by(_datasets.c.id)).scalars().all()
    for dataset_id in ids:  # one dataset's array in memory at a time
        stored = bind.execute(
            sa.select(sa.type_coerce(_datasets.c.rows, sa.Text())).where(
                _datasets.c.id == dataset_id
            )
        ).scalar()
        rows = (
            {"dataset_id": dataset_id, "position": i, "data": to_json(row)}
            for i, row in enumerate(_array(stored))
        )
        for batch in _batches(rows):
            bind.execute(_rows.insert(), batch)
    op.drop_column("datasets", "rows")


def downgrade() -> None:
    op.add_column("datasets", sa.Column("rows", sa.JSON(), nullable=False, server_default="[]"))
    bind = op.get_bind()
    ids = bind.execute(sa.select(_datasets.c.id)).scalars().all()
    for dataset_id in ids:
        texts = bind.execute(
            sa.select(_rows.c.data)
            .where(_rows.c.dataset_id == dataset_id)
            .order_by(_rows.c.position)
        ).scalars()
        array = "[" + ",".join(texts) + "]"
        bind.execute(
            _datasets.update()
            .where(_datasets.c.id == dataset_id)
            .values(rows=sa.type_coerce(array, sa.Text()))
        )
    op.drop_table("dataset_rows")
