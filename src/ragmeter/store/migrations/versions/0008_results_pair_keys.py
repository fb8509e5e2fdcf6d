"""what pairs a result with the same row of another run: results.id_key and query_key (hashes
of the row's id and query, filled here for the results stored before) and an
index on each (after run and metric; then row index and score), so comparing two runs row by
row joins them on an index

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_BATCH = 5_000
_RESULTS = sa.table(
    "results",
    sa.column("id", sa.Integer()),
    sa.column("query", sa.Text()),
    sa.column("raw_dataset", sa.Text()),
    sa.column("id_key", sa.BigInteger()),
    sa.column("query_key", sa.BigInteger()),
)


def _key(text: str) -> int:
    """0008's key: an 8-byte BLAKE2b digest of the text's UTF-8 bytes, big-endian, signed
    (written out here: ``store.pairing`` changed it later, with migration 0030)."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def row_keys(query: str, row: Any) -> tuple[int | None, int]:
    """(id key, query key): the key of the row's id's JSON text (a string or an integer,
    not a boolean; None without one) and of its query."""
    found = row.get("id") if isinstance(row, dict) else None
    is_id = isinstance(found, str | int) and not isinstance(found, bool)
    return (_key(json.dumps(found)) if is_id else None), _key(query)


def _row(text: Any) -> Any:
    """A stored row (JSON text, or already decoded by the driver)."""
    if not isinstance(text, str | bytes):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return None


def _fill() -> None:
    """Keys for every stored result, a batch at a time, in id order."""
    connection = op.get_bind()
    last = 0
    while True:
        found = connection.execute(
            sa.select(_RESULTS.c.id, _RESULTS.c.query, _RESULTS.c.raw_dataset)
            .where(_RESULTS.c.id > last)
            .order_by(_RESULTS.c.id)
            .limit(_BATCH)
        ).all()
        if not found:
            return
        values = []
        for result_id, query, raw in found:
            id_key, query_key = row_keys(query or "", _row(raw))
            values.append({"rid": result_id, "i": id_key, "q": query_key})
        connection.execute(
            _RESULTS.update()
            .where(_RESULTS.c.id == sa.bindparam("rid"))
            .values(id_key=sa.bindparam("i"), query_key=sa.bindparam("q")),
            values,
        )
        last = found[-1][0]


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("id_key", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("query_key", sa.BigInteger(), nullable=True))
    _fill()
    for key in ("id_key", "query_key"):
        op.create_index(
            f"ix_results_run_metric_{key}",
            "results",
            ["run_id", "metric_name", key, "row_index", "score"],
        )


def downgrade() -> None:
    for key in ("id_key", "query_key"):
        op.drop_index(f"ix_results_run_metric_{key}", table_name="results")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("query_key")
        batch.drop_column("id_key")
