"""A run's results read by column: one metric's scores with their row indexes (and pairing
keys) as numpy arrays in row order, and the rows a run has finished. Every reader of a whole
column of results goes through here, so how results lie in the store is this module's
business alone: plain results (a score and nothing else) lie in columnar batches
(``result_batches``), the others one row per result in ``results``, read through the
covering index of run, metric and row (migration 0010), a seek and a walk, never a scan of
the table; a column is the union of both in row order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from ragmeter.runs.storage.result_batches import batch_column, batches_without_id, plain_rows_of
from ragmeter.store.db import plain_rows
from ragmeter.store.models import ResultRow

__all__ = [
    "KeyKind",
    "ScoreColumn",
    "column_query",
    "finished_rows",
    "has_row_ids",
    "score_column",
    "score_columns",
]

#: what pairs a result with the same row of another run: a hash of the row's ``id``, or of
#: its query text (``store.pairing``)
KeyKind = Literal["id", "query"]


@dataclass(frozen=True)
class ScoreColumn:
    """One metric's results of a run in row order: ``rows`` (int64, ascending), ``scores``
    (float64, NaN where null) and, when asked for, each row's pairing ``keys`` (int64, 0
    where the row has none)."""

    rows: np.ndarray[Any, np.dtype[np.int64]]
    scores: np.ndarray[Any, np.dtype[np.float64]]
    keys: np.ndarray[Any, np.dtype[np.int64]] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def nulls(self) -> int:
        return int(np.isnan(self.scores).sum())


def column_query(run_id: str, metric: str, keys: KeyKind | None = None) -> Select[Any]:
    """SQL: row index, score (and pairing key) of ``metric``'s results of a run in row
    order, all in one covering index, so SQLite never reads the results table."""
    picked: list[Any] = [ResultRow.row_index, ResultRow.score]
    if keys is not None:
        picked.append(ResultRow.id_key if keys == "id" else ResultRow.query_key)
    return (
        select(*picked)
        .where(ResultRow.run_id == run_id, ResultRow.metric_name == metric)
        .order_by(ResultRow.row_index)
    )


def score_column(
    session: Session, run_id: str, metric: str, keys: KeyKind | None = None
) -> ScoreColumn:
    """``metric``'s results of run ``run_id`` as columns in row order (empty for a metric or
    run with none), with the pairing keys of ``keys``."""
    found = plain_rows(session, column_query(run_id, metric, keys))
    count = len(found)
    rows = np.fromiter((r[0] for r in found), dtype=np.int64, count=count)
    scores = np.fromiter(
        (np.nan if r[1] is None else r[1] for r in found), dtype=np.float64, count=count
    )
    pairing = None
    if keys is not None:
        pairing = np.fromiter((r[2] or 0 for r in found), dtype=np.int64, count=count)
    plain = batch_column(session, run_id, metric, keys)
    if not len(plain.rows):
        return ScoreColumn(rows, scores, pairing)
    if not count:
        return ScoreColumn(plain.rows, plain.scores, plain.keys)
    order = np.argsort(np.concatenate([plain.rows, rows]), kind="stable")
    both = np.concatenate([plain.rows, rows])[order]
    return ScoreColumn(
        both,
        np.concatenate([plain.scores, scores])[order],
        None
        if pairing is None or plain.keys is None
        else np.concatenate([plain.keys, pairing])[order],
    )


def score_columns(session: Session, run_id: str, metrics: Sequence[str]) -> dict[str, ScoreColumn]:
    """``score_column`` of each of ``metrics``, in their order."""
    return {name: score_column(session, run_id, name) for name in metrics}


def has_row_ids(session: Session, run_id: str, metrics: Sequence[str]) -> bool:
    """Whether every result of ``metrics`` in the run has its row's ``id`` to pair by."""
    lacking = (
        select(ResultRow.id)
        .where(
            ResultRow.run_id == run_id,
            ResultRow.metric_name.in_(list(metrics)),
            ResultRow.id_key.is_(None),
        )
        .limit(1)
    )
    return session.scalar(lacking) is None and not batches_without_id(session, run_id, metrics)


def finished_rows(session: Session, run_id: str) -> set[int]:
    """The row indexes the run has results of (a row's results are stored together)."""
    query = select(ResultRow.row_index).where(ResultRow.run_id == run_id).distinct()
    plain = set(plain_rows_of(session, run_id).tolist())
    return {index for (index,) in plain_rows(session, query)} | plain
