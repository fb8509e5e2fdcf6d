"""Pages of a run's rows as the dashboard's row table asks for them: which rows (anchored on
one metric's result per row: filtered by its score or a text, sorted by row or score, failures
first) and their results. The anchor metric's scores are one column (``result_columns``: the
run's batches of plain results and its rows of results), filtered and ordered with numpy; a
text is looked up in the row search index of ``store.search``; a page's results are read for
its rows alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import orjson
from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from ragmeter.runs.storage.result_batches import from_row, plain_scores, stored_row_data
from ragmeter.runs.storage.result_columns import score_column
from ragmeter.store.db import json_text, plain_rows
from ragmeter.store.models import DatasetRowRecord, ResultRow
from ragmeter.store.rowdata import row_field, row_of
from ragmeter.store.search import matching_rows

__all__ = ["PageResult", "RowQuery", "page_results", "pick_rows"]


@dataclass(frozen=True)
class RowQuery:
    """Rows of a run anchored on ``metric``'s result: those scoring under ``below`` or
    holding ``text`` (in their query, response or answer), with the rows failing
    (``failures_first``: a null score or a failed verdict on ``metric``, or on any metric
    when ``any_metric``) first, then by row or score (nulls last), ascending or not."""

    metric: str
    sort: Literal["row", "score"] = "row"
    descending: bool = False
    failures_first: bool = False
    any_metric: bool = False
    below: float | None = None
    text: str | None = None


@dataclass(frozen=True)
class PageResult:
    """One result of a page's row: its score and verdict, null reason, the row's query, the
    target's answer (``prediction``) and the row's own response (``given``)."""

    row_index: int
    metric_name: str
    score: float | None
    passing: bool | None
    error: str | None
    error_kind: str | None
    query: str
    prediction: Any
    given: str | None


def _failing(session: Session, run_id: str, metric: str | None) -> np.ndarray[Any, Any]:
    """Rows with a null score or a failed verdict (on ``metric``, else on any metric): all
    are rows of ``results`` (a plain result has a score and no verdict)."""
    where = [
        ResultRow.run_id == run_id,
        or_(ResultRow.score.is_(None), ResultRow.passing.is_(False)),
    ]
    if metric is not None:
        where.append(ResultRow.metric_name == metric)
    found = plain_rows(session, select(ResultRow.row_index).where(*where).distinct())
    return np.fromiter((row for (row,) in found), dtype=np.int64, count=len(found))


def pick_rows(
    session: Session, run_id: str, dataset_id: int, asked: RowQuery, offset: int, limit: int
) -> tuple[list[int], int]:
    """The row indexes of one page of the rows ``asked`` for, in order, and how many rows
    match in all."""
    column = score_column(session, run_id, asked.metric)
    rows, scores = column.rows, column.scores
    keep = np.ones(len(rows), dtype=bool)
    if asked.below is not None:
        keep &= scores < asked.below  # a null is never below
    if asked.text:
        found = np.asarray(matching_rows(session, run_id, asked.text), dtype=np.int64)
        keep &= np.isin(rows, found)
    rows, scores = rows[keep], scores[keep]
    keys: list[np.ndarray[Any, Any]] = []
    if asked.sort == "score":
        nulls = np.isnan(scores)
        value = np.where(nulls, 0.0, -scores if asked.descending else scores)
        keys = [rows, value, nulls]  # np.lexsort: the last key first
    else:
        keys = [-rows if asked.descending else rows]
    if asked.failures_first:
        failing = _failing(session, run_id, None if asked.any_metric else asked.metric)
        keys.append(~np.isin(rows, failing))
    order = np.lexsort(keys)
    page = rows[order][max(offset, 0) : max(offset, 0) + max(limit, 0)]
    return page.tolist(), len(rows)


def page_results(
    session: Session, run_id: str, dataset_id: int, indexes: Sequence[int]
) -> list[PageResult]:
    """Every result of the rows at ``indexes`` (in no particular order)."""
    found = session.execute(
        select(
            ResultRow.row_index,
            ResultRow.metric_name,
            ResultRow.score,
            ResultRow.passing,
            ResultRow.error,
            ResultRow.error_kind,
            ResultRow.query,
            ResultRow.prediction,
            row_field(ResultRow, "response", text=True),
        )
        .outerjoin(DatasetRowRecord, row_of(ResultRow, dataset_id))
        .where(and_(ResultRow.run_id == run_id, ResultRow.row_index.in_(list(indexes))))
    ).all()
    out = [PageResult(*row) for row in found]
    plain = plain_scores(session, run_id, rows=set(indexes))
    data = {
        p: orjson.loads(text)
        for p, text in stored_row_data(session, dataset_id, {p[0] for p in plain}).items()
    }
    for row, metric, score, prediction, _contexts in plain:
        stored = data.get(row, {})
        response = stored.get("response")
        given = response if response is None or isinstance(response, str) else json_text(response)
        out.append(
            PageResult(
                row, metric, score, None, None, None, str(stored.get("query") or ""),
                from_row(stored, prediction), given,
            )
        )  # fmt: skip
    return out
