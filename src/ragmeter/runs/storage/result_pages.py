"""Pages of a run's rows as the dashboard's row table asks for them: which rows (anchored on
one metric's result per row: filtered by its score or a text, sorted by row or score, failures
first) and their results, read with indexed SQL (the run/metric/score index, the row search
index of ``store.search``) without loading every result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session, aliased

from ragmeter.store.models import DatasetRowRecord, ResultRow
from ragmeter.store.rowdata import row_field, row_of
from ragmeter.store.search import text_condition

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


def _conditions(bind: Any, anchor: Any, asked: RowQuery) -> list[Any]:
    where: list[Any] = []
    if asked.below is not None:
        where.append(anchor.score < asked.below)
    if asked.text:
        where.append(text_condition(bind, anchor, asked.text))
    return where


def _order(anchor: Any, run_id: str, asked: RowQuery) -> list[Any]:
    order: list[Any] = []
    if asked.failures_first:
        if not asked.any_metric:
            failed = or_(anchor.score.is_(None), anchor.passing.is_(False))
        else:  # one list of the failed rows, not a lookup per row
            failing = select(ResultRow.row_index).where(
                ResultRow.run_id == run_id,
                or_(ResultRow.score.is_(None), ResultRow.passing.is_(False)),
            )
            failed = anchor.row_index.in_(failing)
        order.append(failed.desc())
    if asked.sort == "score":
        score = anchor.score.desc() if asked.descending else anchor.score
        order += [anchor.score.is_(None), score, anchor.row_index]
    else:
        order.append(anchor.row_index.desc() if asked.descending else anchor.row_index)
    return order


def pick_rows(
    session: Session, run_id: str, dataset_id: int, asked: RowQuery, offset: int, limit: int
) -> tuple[list[int], int]:
    """The row indexes of one page of the rows ``asked`` for, in order, and how many rows
    match in all (one statement each)."""
    anchor = aliased(ResultRow)
    where = [
        anchor.run_id == run_id,
        anchor.metric_name == asked.metric,
        *_conditions(session.get_bind(), anchor, asked),
    ]
    counted = select(func.count()).select_from(anchor)
    picked = select(anchor.row_index)
    if asked.text:  # the search reads the rows' responses
        counted = counted.outerjoin(DatasetRowRecord, row_of(anchor, dataset_id))
        picked = picked.outerjoin(DatasetRowRecord, row_of(anchor, dataset_id))
    picked = picked.where(*where).order_by(*_order(anchor, run_id, asked))
    total = session.scalar(counted.where(*where)) or 0
    return list(session.scalars(picked.offset(offset).limit(limit))), int(total)


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
    return [PageResult(*row) for row in found]
