"""A run's plain results (a score and nothing else, on the run's own dataset rows) as
columnar batches of ``result_batches``: one record per metric and batch of rows, its rows,
scores and pairing keys as little-endian arrays. One INSERT per metric and batch instead of
one per result, and a whole column read back as a few blobs. Results holding anything more
stay rows of ``results``; ``result_columns`` reads a metric's column as the union of both."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import orjson
from sqlalchemy import Select, Text, delete, func, or_, select
from sqlalchemy import cast as sa_cast
from sqlalchemy.orm import Session

from ragmeter.store.db import insert_plain, plain_rows
from ragmeter.store.models import DatasetRowRecord, ResultBatch, ResultRow, RunRecord
from ragmeter.store.rowdata import input_value
from ragmeter.store.search import forget_rows

__all__ = [
    "BATCH_COLUMNS",
    "BatchColumn",
    "PlainResult",
    "batch_arrays",
    "batch_column",
    "batch_plain",
    "batch_values",
    "batches_without_id",
    "from_row",
    "input_fields",
    "insert_batches",
    "plain_neighbours",
    "plain_rows_of",
    "plain_scores",
    "remove_plain",
    "stored_row_data",
]

#: ``result_batches``' columns as ``batch_values`` fills them, in this order
BATCH_COLUMNS = (
    "run_id",
    "metric_name",
    "first_row",
    "last_row",
    "size",
    "without_id",
    "prediction_field",
    "contexts_field",
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
    fields: tuple[str | None, str | None] = (None, None),
) -> tuple[Any, ...]:
    """One metric's plain results of rows ``rows`` (ascending) as a ``result_batches`` tuple
    of ``BATCH_COLUMNS`` (a row without an ``id`` keeps 0 as its id key); ``fields``: the
    fields of each row that its prediction and contexts are (None: it has none)."""
    count = len(rows)
    return batch_arrays(
        run_id,
        metric,
        np.asarray(rows, dtype=np.int64),
        np.asarray(scores, dtype=np.float64),
        np.fromiter((0 if k is None else k for k in id_keys), dtype=np.int64, count=count),
        np.fromiter((k or 0 for k in query_keys), dtype=np.int64, count=count),
        fields,
    )


def batch_arrays(
    run_id: str,
    metric: str,
    rows: np.ndarray[Any, Any],
    scores: np.ndarray[Any, Any],
    id_keys: np.ndarray[Any, Any],
    query_keys: np.ndarray[Any, Any],
    fields: tuple[str | None, str | None] = (None, None),
) -> tuple[Any, ...]:
    """``batch_values`` of arrays (an id key of 0: the row has no ``id``)."""
    return (
        run_id,
        metric,
        int(rows[0]),
        int(rows[-1]),
        len(rows),
        int(np.count_nonzero(id_keys == 0)),
        *fields,
        rows.astype(_ROWS).tobytes(),
        scores.astype(_SCORES).tobytes(),
        id_keys.astype(_KEYS).tobytes(),
        query_keys.astype(_KEYS).tobytes(),
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


#: a plain result: (row, metric, score, its prediction's field of the row, its contexts')
PlainResult = tuple[int, str, float, str | None, str | None]


def _wanted(rows: Collection[int] | None) -> np.ndarray[Any, np.dtype[np.int64]] | None:
    if rows is None:
        return None
    return np.unique(np.fromiter(rows, dtype=np.int64, count=len(rows)))


def plain_scores(
    session: Session,
    run_id: str,
    *,
    metrics: Collection[str] | None = None,
    rows: Collection[int] | None = None,
    lo: int | None = None,
    hi: int | None = None,
) -> list[PlainResult]:
    """The run's plain results of ``metrics`` (else all), of ``rows`` (else all) between
    rows ``lo`` and ``hi`` (inclusive, where given), in batch order; only the batches whose
    rows reach the range are read."""
    wanted = _wanted(rows)
    if wanted is not None:
        if not len(wanted):
            return []
        lo = int(wanted[0]) if lo is None else max(lo, int(wanted[0]))
        hi = int(wanted[-1]) if hi is None else min(hi, int(wanted[-1]))
    query = select(
        ResultBatch.metric_name,
        ResultBatch.prediction_field,
        ResultBatch.contexts_field,
        ResultBatch.rows,
        ResultBatch.scores,
    ).where(ResultBatch.run_id == run_id)
    if metrics is not None:
        query = query.where(ResultBatch.metric_name.in_(list(metrics)))
    if lo is not None:
        query = query.where(ResultBatch.last_row >= lo)
    if hi is not None:
        query = query.where(ResultBatch.first_row <= hi)
    out: list[PlainResult] = []
    found = plain_rows(session, query.order_by(ResultBatch.id))
    for name, prediction, contexts, row_blob, score_blob in found:
        at = np.frombuffer(bytes(row_blob), dtype=_ROWS)
        scores = np.frombuffer(bytes(score_blob), dtype=_SCORES)
        keep = np.ones(len(at), dtype=bool)
        if lo is not None:
            keep &= at >= lo
        if hi is not None:
            keep &= at <= hi
        if wanted is not None:
            keep &= np.isin(at, wanted)
        pairs = zip(at[keep].tolist(), scores[keep].tolist(), strict=True)
        out += [(r, name, s, prediction, contexts) for r, s in pairs]
    return out


def plain_rows_of(session: Session, run_id: str) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The rows of the run having a plain result, ascending, each once."""
    query = select(ResultBatch.rows).where(ResultBatch.run_id == run_id)
    found = _joined((f[0] for f in plain_rows(session, query)), _ROWS, np.dtype(np.int64))
    return np.unique(found)


def plain_neighbours(session: Session, run_id: str, row: int) -> tuple[int | None, int | None]:
    """The rows just before and after ``row`` having a plain result in the run (None at
    either end), read from the batches' ranges and the few batches spanning ``row``."""
    mine = ResultBatch.run_id == run_id
    before = session.scalar(
        select(func.max(ResultBatch.last_row)).where(mine, ResultBatch.last_row < row)
    )
    after = session.scalar(
        select(func.min(ResultBatch.first_row)).where(mine, ResultBatch.first_row > row)
    )
    spanning = select(ResultBatch.rows).where(
        mine, ResultBatch.first_row <= row, ResultBatch.last_row >= row
    )
    for (blob,) in plain_rows(session, spanning):
        at = np.frombuffer(bytes(blob), dtype=_ROWS)
        below = at[: int(np.searchsorted(at, row))]
        if len(below) and (before is None or int(below[-1]) > before):
            before = int(below[-1])
        above = at[int(np.searchsorted(at, row, side="right")) :]
        if len(above) and (after is None or int(above[0]) < after):
            after = int(above[0])
    return before, after


def remove_plain(
    session: Session, run_id: str, rows: Collection[int], metrics: Collection[str] | None = None
) -> list[tuple[PlainResult, int, int]]:
    """Take ``rows``' plain results (of ``metrics``, else all) out of their batches, in the
    session's transaction (a batch left empty is deleted, a row's search document goes with
    its indexed result): what they were, with their id and query keys, for a caller that
    keeps them another way or forgets them."""
    wanted = _wanted(rows)
    if wanted is None or not len(wanted):
        return []
    query = select(ResultBatch).where(
        ResultBatch.run_id == run_id,
        ResultBatch.last_row >= int(wanted[0]),
        ResultBatch.first_row <= int(wanted[-1]),
    )
    if metrics is not None:
        query = query.where(ResultBatch.metric_name.in_(list(metrics)))
    taken: list[tuple[PlainResult, int, int]] = []
    for batch in session.scalars(query).all():
        at = np.frombuffer(bytes(batch.rows), dtype=_ROWS)
        hit = np.isin(at, wanted)
        if not hit.any():
            continue
        scores = np.frombuffer(bytes(batch.scores), dtype=_SCORES)
        ids = np.frombuffer(bytes(batch.id_keys), dtype=_KEYS)
        queries = np.frombuffer(bytes(batch.query_keys), dtype=_KEYS)
        fields = (batch.prediction_field, batch.contexts_field)
        taken.extend(
            ((row, batch.metric_name, score, *fields), id_key, query_key)
            for row, score, id_key, query_key in zip(
                at[hit].tolist(),
                scores[hit].tolist(),
                ids[hit].tolist(),
                queries[hit].tolist(),
                strict=True,
            )
        )
        left = ~hit
        if not left.any():
            session.delete(batch)
            continue
        batch.rows = at[left].tobytes()
        batch.scores = scores[left].tobytes()
        batch.id_keys = ids[left].tobytes()
        batch.query_keys = queries[left].tobytes()
        batch.first_row = int(at[left][0])
        batch.last_row = int(at[left][-1])
        batch.size = int(left.sum())
        batch.without_id = int((ids[left] == 0).sum())
    session.flush()
    forget_rows(session, run_id, [(plain[0], plain[1]) for plain, _, _ in taken])
    return taken


#: positions of dataset rows read in one statement
_POSITIONS = 500


def stored_row_data(
    session: Session, dataset_id: int, positions: Collection[int]
) -> dict[int, str]:
    """The stored JSON text of dataset ``dataset_id``'s rows at ``positions``."""
    wanted = sorted(set(positions))
    out: dict[int, str] = {}
    if not wanted:
        return out
    if wanted[-1] - wanted[0] < 2 * len(wanted):  # dense: one range
        ranges = [
            select(DatasetRowRecord.position, DatasetRowRecord.data).where(
                DatasetRowRecord.dataset_id == dataset_id,
                DatasetRowRecord.position.between(wanted[0], wanted[-1]),
            )
        ]
    else:
        ranges = [
            select(DatasetRowRecord.position, DatasetRowRecord.data).where(
                DatasetRowRecord.dataset_id == dataset_id,
                DatasetRowRecord.position.in_(wanted[i : i + _POSITIONS]),
            )
            for i in range(0, len(wanted), _POSITIONS)
        ]
    keep = set(wanted)
    for query in ranges:
        out.update((p, d) for p, d in plain_rows(session, query) if p in keep)
    return out


#: results of one metric in one batch when a run's plain rows of results are batched
BATCH_ROWS = 10_000


#: fields of a row a metric's prediction may be, and its contexts (the first that equals)
PREDICTION_FIELDS = ("retrieved_ids", "response", "retrieved_contexts")
CONTEXTS_FIELDS = ("reference_ids", "retrieved_contexts", "reference_contexts", "reference")


def input_fields(
    prediction: Any, contexts: Any, row: dict[str, Any]
) -> tuple[str | None, str | None] | None:
    """The fields of ``row`` that ``prediction`` and ``contexts`` (what a metric was given)
    equal (None for one that is None), or None when one is no field of the row."""
    found: list[str | None] = []
    for value, names in ((prediction, PREDICTION_FIELDS), (contexts, CONTEXTS_FIELDS)):
        if value is None:
            found.append(None)
            continue
        name = next((n for n in names if row.get(n) == value), None)
        if name is None:
            return None
        found.append(name)
    return found[0], found[1]


def from_row(row: dict[str, Any], field: str | None) -> Any:
    """What a plain result's metric was given: field ``field`` of its row, or its first
    items (``input_value``; None: nothing)."""
    return input_value(row, field)


def _plain_result() -> list[Any]:
    """SQL: a row of ``results`` holding a score and nothing else but its inputs, on its
    dataset row."""
    empty = (
        ResultRow.passing,
        ResultRow.feedback,
        ResultRow.error,
        ResultRow.error_kind,
        ResultRow.raw_dataset,
        ResultRow.details,
    )
    return [
        ResultRow.score.is_not(None),
        ResultRow.prediction_cost == 0,
        *(column.is_(None) for column in empty),
        or_(ResultRow.cost.is_(None), sa_cast(ResultRow.cost, Text) == "null"),  # JSON null
    ]


def batch_plain(session: Session, run_id: str, rows: int = BATCH_ROWS) -> int:
    """Move a run's plain results that are rows of ``results`` (stored before batches) into
    batches of at most ``rows`` rows per metric and inputs, in the session's transaction;
    how many moved. A result whose inputs are no fields of its row stays a row."""
    dataset_id = session.scalar(select(RunRecord.dataset_id).where(RunRecord.id == run_id))
    query = (
        select(
            ResultRow.id,
            ResultRow.metric_name,
            ResultRow.row_index,
            ResultRow.score,
            ResultRow.id_key,
            ResultRow.query_key,
            sa_cast(ResultRow.prediction, Text),
            sa_cast(ResultRow.contexts, Text),
        )
        .where(ResultRow.run_id == run_id, *_plain_result())
        .order_by(ResultRow.metric_name, ResultRow.row_index)
    )
    found = plain_rows(session, query)
    data = stored_row_data(session, dataset_id or 0, {f[2] for f in found})
    parsed: dict[int, dict[str, Any]] = {}
    groups: dict[tuple[str, str | None, str | None], list[tuple[Any, ...]]] = {}
    for f in found:
        if f[2] not in data:
            continue
        row = parsed.get(f[2])
        if row is None:
            row = parsed[f[2]] = orjson.loads(data[f[2]])
        prediction = None if f[6] is None else orjson.loads(f[6])
        contexts = None if f[7] is None else orjson.loads(f[7])
        fields = input_fields(prediction, contexts, row)
        if fields is not None:
            groups.setdefault((f[1], *fields), []).append(f)
    values = []
    moved: list[int] = []
    for (metric, prediction_field, contexts_field), mine in groups.items():
        for at in range(0, len(mine), rows):
            part = mine[at : at + rows]
            values.append(
                batch_values(
                    run_id,
                    metric,
                    [f[2] for f in part],
                    [f[3] for f in part],
                    [f[4] for f in part],
                    [f[5] for f in part],
                    (prediction_field, contexts_field),
                )
            )
        moved += [f[0] for f in mine]
    insert_batches(session, values)
    for at in range(0, len(moved), 500):
        session.execute(delete(ResultRow).where(ResultRow.id.in_(moved[at : at + 500])))
    return len(moved)
