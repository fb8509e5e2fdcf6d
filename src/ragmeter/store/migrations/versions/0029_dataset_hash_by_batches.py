"""a dataset's content hash made from its rows' canonical texts joined by commas (one orjson
call per batch of rows) instead of from a digest of each row: every stored version's hash is
computed again, and the runs that show it in their lineage show the new one

The two definitions are written out here as they are at this revision, so this migration
reads the same whatever the code does later.

Revision ID: 0029
Revises: 0028
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_BATCH = 2000
_SHORT = 12  # hex digits of the hash a run's lineage shows
_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_DATASETS = sa.table(
    "datasets", sa.column("id", sa.Integer()), sa.column("content_hash", sa.String(64))
)
_ROWS = sa.table(
    "dataset_rows",
    sa.column("dataset_id", sa.Integer()),
    sa.column("position", sa.Integer()),
    sa.column("data", sa.Text()),
)
_RUNS = sa.table(
    "runs",
    sa.column("id", sa.String(64)),
    sa.column("dataset_id", sa.Integer()),
    sa.column("lineage", sa.JSON()),
)


def _batches(connection: Any, dataset_id: int) -> Iterator[list[Any]]:
    """A dataset's rows in order, decoded, a batch at a time."""
    start = 0
    while True:
        texts = (
            connection.execute(
                sa.select(_ROWS.c.data)
                .where(
                    _ROWS.c.dataset_id == dataset_id,
                    _ROWS.c.position >= start,
                    _ROWS.c.position < start + _BATCH,
                )
                .order_by(_ROWS.c.position)
            )
            .scalars()
            .all()
        )
        if texts:  # the standard reader: integers past 64 bits exact, lone surrogates read
            yield [json.loads(t) if isinstance(t, str | bytes) else t for t in texts]
        if len(texts) < _BATCH:
            return
        start += _BATCH


def _without_nul(value: Any) -> Any:
    """``value`` with each NUL character (in a key or a text) as U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def _one(row: Any) -> bytes:
    try:
        return orjson.dumps(row, option=_CANONICAL)
    except TypeError:
        text = json.dumps(
            row, sort_keys=True, default=str, separators=(",", ":"), ensure_ascii=False
        )
        return text.encode("utf-8", "surrogatepass")


def _joined(connection: Any, dataset_id: int) -> str:
    """0029's hash: SHA-256 of the rows' canonical texts (a NUL as U+FFFD) joined by
    commas."""
    digest = hashlib.sha256()
    first = True
    for rows in _batches(connection, dataset_id):
        try:
            text = orjson.dumps(rows, option=_CANONICAL)[1:-1]
        except TypeError:
            text = b",".join(map(_one, rows))
        if b"\\u0000" in text:  # a NUL stored before the store made it U+FFFD
            text = b",".join(_one(_without_nul(row)) for row in rows)
        digest.update(text if first else b"," + text)
        first = False
    return digest.hexdigest()


def _per_row(connection: Any, dataset_id: int) -> str:
    """0028's hash: SHA-256 of a 16-byte BLAKE2b digest of each row's canonical text."""
    digest = hashlib.sha256()
    for rows in _batches(connection, dataset_id):
        for row in rows:
            try:
                text = orjson.dumps(row, option=_CANONICAL)
            except TypeError:
                text = json.dumps(row, sort_keys=True, default=str).encode()
            digest.update(hashlib.blake2b(text, digest_size=16).digest())
    return digest.hexdigest()


def _rehash(make: Callable[[Any, int], str]) -> None:
    """Every dataset whose hash is known gets ``make``'s, and its runs' lineage shows it."""
    connection = op.get_bind()
    known = connection.execute(
        sa.select(_DATASETS.c.id).where(_DATASETS.c.content_hash.is_not(None))
    ).scalars()
    for dataset_id in list(known):
        new = make(connection, dataset_id)
        connection.execute(
            _DATASETS.update().where(_DATASETS.c.id == dataset_id).values(content_hash=new)
        )
        runs = connection.execute(
            sa.select(_RUNS.c.id, _RUNS.c.lineage).where(_RUNS.c.dataset_id == dataset_id)
        ).all()
        for run_id, lineage in runs:
            shown = lineage.get("dataset") if isinstance(lineage, dict) else None
            if isinstance(shown, dict) and shown.get("hash"):
                shown["hash"] = new[:_SHORT]
                connection.execute(
                    _RUNS.update().where(_RUNS.c.id == run_id).values(lineage=lineage)
                )


def upgrade() -> None:
    _rehash(_joined)


def downgrade() -> None:
    _rehash(_per_row)
