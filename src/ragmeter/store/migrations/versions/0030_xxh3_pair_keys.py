"""the keys that pair a result with the same row of another run are XXH3-64 hashes instead of
BLAKE2b ones (one C call a key, about a quarter of the time: storing a run makes two keys a
row): every stored key is computed again, in ``results`` and in ``result_batches``, so runs
stored before pair with runs stored after

A key is made from the row's ``id`` and from its query text, each read where the store keeps
them: a result's own query and its row (its own copy, or else the run's dataset row at its
index); a batch's rows are the run's dataset rows. Before, an id's key was the hash of its
JSON text (so that "1" and 1 differ); now a string id is hashed as it is and an integer's
decimal text with another seed. Both definitions are written out here as they are at this
revision, so this migration reads the same whatever the code does later.

Revision ID: 0030
Revises: 0029
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import sqlalchemy as sa
import xxhash
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

_BATCH = 5_000
_SIGNED = 1 << 63
_RESULTS = sa.table(
    "results",
    sa.column("id", sa.Integer()),
    sa.column("run_id", sa.String(64)),
    sa.column("row_index", sa.Integer()),
    sa.column("query", sa.Text()),
    sa.column("raw_dataset", sa.Text()),
    sa.column("id_key", sa.BigInteger()),
    sa.column("query_key", sa.BigInteger()),
)
_BATCHES = sa.table(
    "result_batches",
    sa.column("id", sa.Integer()),
    sa.column("run_id", sa.String(64)),
    sa.column("first_row", sa.Integer()),
    sa.column("last_row", sa.Integer()),
    sa.column("without_id", sa.Integer()),
    sa.column("rows", sa.LargeBinary()),
    sa.column("id_keys", sa.LargeBinary()),
    sa.column("query_keys", sa.LargeBinary()),
)
_RUNS = sa.table("runs", sa.column("id", sa.String(64)), sa.column("dataset_id", sa.Integer()))
_ROWS = sa.table(
    "dataset_rows",
    sa.column("dataset_id", sa.Integer()),
    sa.column("position", sa.Integer()),
    sa.column("data", sa.Text()),
)

#: a key of a text, and a key of an id (a string or an integer, not a boolean)
Hash = Callable[[str], int]
IdHash = Callable[[str | int], int]


def _xxh3(text: str, seed: int = 0) -> int:
    """0030's key of a text: XXH3-64 of its UTF-8 bytes, as a signed 64-bit integer."""
    value = xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"), seed)
    return value - 2 * _SIGNED if value >= _SIGNED else value


def _xxh3_id(found: str | int) -> int:
    """0030's key of an id: a string's key, an integer's decimal text's with seed 1."""
    return _xxh3(found) if isinstance(found, str) else _xxh3(str(int(found)), 1)


def _blake2b(text: str) -> int:
    """0008's key of a text: an 8-byte BLAKE2b digest of its UTF-8 bytes, big-endian,
    signed."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _blake2b_id(found: str | int) -> int:
    """0008's key of an id: the key of its JSON text."""
    return _blake2b(json.dumps(found))


def _row(data: Any) -> Any:
    """A stored row (JSON text, or already decoded by the driver); None when unreadable."""
    if not isinstance(data, str | bytes):
        return data
    try:
        return json.loads(data)
    except ValueError:
        return None


def _id_key(row: Any, make: IdHash) -> int | None:
    """The key of a row's ``id``: a string or an integer, not a boolean; None without
    one."""
    found = row.get("id") if isinstance(row, dict) else None
    if isinstance(found, str | int) and not isinstance(found, bool):
        return make(found)
    return None


def _results(connection: Any, make: Hash, make_id: IdHash) -> None:
    """Keys for every row of ``results``, a batch at a time in id order; a result without
    its own copy of its row reads the run's dataset row at its index."""
    dataset_row = _ROWS.alias("dataset_row")
    last = 0
    while True:
        found = connection.execute(
            sa.select(_RESULTS.c.id, _RESULTS.c.query, _RESULTS.c.raw_dataset, dataset_row.c.data)
            .select_from(
                _RESULTS.outerjoin(_RUNS, _RUNS.c.id == _RESULTS.c.run_id).outerjoin(
                    dataset_row,
                    sa.and_(
                        dataset_row.c.dataset_id == _RUNS.c.dataset_id,
                        dataset_row.c.position == _RESULTS.c.row_index,
                    ),
                )
            )
            .where(_RESULTS.c.id > last)
            .order_by(_RESULTS.c.id)
            .limit(_BATCH)
        ).all()
        if not found:
            return
        values = [
            {
                "rid": result_id,
                "i": _id_key(_row(raw if raw is not None else data), make_id),
                "q": make(query or ""),
            }
            for result_id, query, raw, data in found
        ]
        connection.execute(
            _RESULTS.update()
            .where(_RESULTS.c.id == sa.bindparam("rid"))
            .values(id_key=sa.bindparam("i"), query_key=sa.bindparam("q")),
            values,
        )
        last = found[-1][0]


def _dataset_rows(connection: Any, run_id: str, positions: list[int]) -> dict[int, Any]:
    """The rows at ``positions`` (ascending) of a run's dataset, by position, each decoded
    once: read as one range when they are dense, else by lists of positions (a resumed
    run's batch may hold rows far apart)."""
    if not positions:
        return {}
    first, last = positions[0], positions[-1]
    query = (
        sa.select(_ROWS.c.position, _ROWS.c.data)
        .select_from(_ROWS.join(_RUNS, _RUNS.c.dataset_id == _ROWS.c.dataset_id))
        .where(_RUNS.c.id == run_id)
    )
    if last - first < 2 * len(positions):
        parts = [query.where(_ROWS.c.position.between(first, last))]
    else:
        parts = [
            query.where(_ROWS.c.position.in_(positions[at : at + _BATCH]))
            for at in range(0, len(positions), _BATCH)
        ]
    wanted = set(positions)
    found: dict[int, Any] = {}
    for part in parts:
        for position, data in connection.execute(part):
            if position in wanted:
                found[position] = _row(data)
    return found


def _batches(connection: Any, make: Hash, make_id: IdHash) -> None:
    """Keys for every batch of ``result_batches`` (little-endian int64 arrays, an id key of
    0 for a row without an id), one batch at a time in id order; the batches of a run's
    other metrics over the same rows (stored one after the other) reuse its rows."""
    last = 0
    kept: tuple[tuple[str, bytes], dict[int, Any]] | None = None
    while True:
        found = connection.execute(
            sa.select(_BATCHES.c.id, _BATCHES.c.run_id, _BATCHES.c.rows)
            .where(_BATCHES.c.id > last)
            .order_by(_BATCHES.c.id)
            .limit(1)
        ).first()
        if found is None:
            return
        batch_id, run_id, rows = found
        rows = bytes(rows)  # (PostgreSQL's driver gives a memoryview)
        positions = np.frombuffer(rows, dtype="<i4").tolist()
        if kept is None or kept[0] != (run_id, rows):
            kept = ((run_id, rows), _dataset_rows(connection, run_id, positions))
        data = kept[1]
        id_keys = []
        query_keys = []
        for position in positions:
            row = data.get(position)
            query = row.get("query") if isinstance(row, dict) else None
            id_keys.append(_id_key(row, make_id) or 0)
            query_keys.append(make(query if isinstance(query, str) else ""))
        connection.execute(
            _BATCHES.update()
            .where(_BATCHES.c.id == batch_id)
            .values(
                id_keys=np.asarray(id_keys, dtype="<i8").tobytes(),
                query_keys=np.asarray(query_keys, dtype="<i8").tobytes(),
                without_id=id_keys.count(0),
            )
        )
        last = batch_id


def _rekey(make: Hash, make_id: IdHash) -> None:
    connection = op.get_bind()
    _results(connection, make, make_id)
    _batches(connection, make, make_id)


def upgrade() -> None:
    _rekey(_xxh3, _xxh3_id)


def downgrade() -> None:
    _rekey(_blake2b, _blake2b_id)
