"""A run's plain results (a score and nothing else, on the run's own dataset rows) as
columnar batches of ``result_batches``: one record per metric and batch of rows, its rows,
scores and pairing keys as little-endian arrays. One INSERT per metric and batch instead of
one per result, and a whole column read back as a few blobs. Results holding anything more
stay rows of ``results``; ``result_columns`` reads a metric's column as the union of both."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from ragmeter.store.db import insert_plain, plain_rows
from ragmeter.store.models import ResultBatch

__all__ = [
    "BATCH_COLUMNS",
    "BatchColumn",
    "batch_column",
    "batch_rows",
    "batch_values",
    "batches_without_id",
    "insert_batches",
]

#: ``result_batches``' columns as ``batch_values`` fills them, in this order
BATCH_COLUMNS = (
    "run_id",
    "metric_name",
    "first_row",
    "last_row",
    "size",
    "without_id",
    "rows",
    "scores",
    "id_keys",
    "query_keys",
)
_ROWS = np.dtype("<i4")
_SCORES = np.dtype("<f8")
_KEYS = np.dtype("<i8")


def batch_values(
    run_id: str,
    metric: str,
    rows: Sequence[int],
    scores: Sequence[float],
    id_keys: Sequence[int | None],
    query_keys: Sequence[int | None],
) -> tuple[Any, ...]:
    """One metric's plain results of rows ``rows`` (ascending) as a ``result_batches`` tuple
    of ``BATCH_COLUMNS`` (a row without an ``id`` keeps 0 as its id key)."""
    ids = np.fromiter((0 if k is None else k for k in id_keys), dtype=_KEYS, count=len(rows))
    return (
        run_id,
        metric,
        int(rows[0]),
        int(rows[-1]),
        len(rows),
        sum(1 for k in id_keys if k is None),
        np.asarray(rows, dtype=_ROWS).tobytes(),
        np.asarray(scores, dtype=_SCORES).tobytes(),
        ids.tobytes(),
        np.fromiter((k or 0 for k in query_keys), dtype=_KEYS, count=len(rows)).tobytes(),
    )


def insert_batches(session: Session, values: Sequence[tuple[Any, ...]]) -> None:
    """INSERT ``batch_values`` tuples in the session's transaction."""
    insert_plain(session, ResultBatch, BATCH_COLUMNS, values)


@dataclass(frozen=True)
class BatchColumn:
    """A metric's plain results of a run in batch order: rows (int64), scores (float64) and,
    when asked for, the rows' pairing keys (int64)."""

    rows: np.ndarray[Any, np.dtype[np.int64]]
    scores: np.ndarray[Any, np.dtype[np.float64]]
    keys: np.ndarray[Any, np.dtype[np.int64]] | None


def _query(run_id: str, metric: str, *picked: Any) -> Select[Any]:
    return (
        select(*picked)
        .where(ResultBatch.run_id == run_id, ResultBatch.metric_name == metric)
        .order_by(ResultBatch.first_row)
    )


def _joined(
    blobs: Iterable[Any], dtype: np.dtype[Any], into: np.dtype[Any]
) -> np.ndarray[Any, Any]:
    parts = [np.frombuffer(bytes(blob), dtype=dtype) for blob in blobs]
    if not parts:
        return np.empty(0, dtype=into)
    return np.concatenate(parts).astype(into, copy=False)


def batch_column(
    session: Session, run_id: str, metric: str, keys: Literal["id", "query"] | None = None
) -> BatchColumn:
    """``metric``'s plain results of run ``run_id`` (empty when it has none), with the
    pairing keys of ``keys``."""
    picked: list[Any] = [ResultBatch.rows, ResultBatch.scores]
    if keys is not None:
        picked.append(ResultBatch.id_keys if keys == "id" else ResultBatch.query_keys)
    found = plain_rows(session, _query(run_id, metric, *picked))
    rows = _joined((f[0] for f in found), _ROWS, np.dtype(np.int64))
    scores = _joined((f[1] for f in found), _SCORES, np.dtype(np.float64))
    pairing = None
    if keys is not None:
        pairing = _joined((f[2] for f in found), _KEYS, np.dtype(np.int64))
    return BatchColumn(rows, scores, pairing)


def batch_rows(session: Session, run_id: str) -> set[int]:
    """The rows of the run that have a plain result of some metric."""
    query = select(ResultBatch.rows).where(ResultBatch.run_id == run_id)
    found = _joined((f[0] for f in plain_rows(session, query)), _ROWS, np.dtype(np.int64))
    return set(np.unique(found).tolist())


def batches_without_id(session: Session, run_id: str, metrics: Sequence[str]) -> bool:
    """Whether a plain result of ``metrics`` in the run is of a row without an ``id``."""
    lacking = (
        select(ResultBatch.id)
        .where(
            ResultBatch.run_id == run_id,
            ResultBatch.metric_name.in_(list(metrics)),
            ResultBatch.without_id > 0,
        )
        .limit(1)
    )
    return session.scalar(lacking) is not None
