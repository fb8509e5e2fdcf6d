"""A run looked at row by row: a page of its rows (sorted, filtered) read with indexed SQL, and
each metric's score distribution and null reasons, without loading every result in Python."""

from __future__ import annotations

import json
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel
from sqlalchemy import String, and_, cast, exists, func, or_, select
from sqlalchemy.orm import aliased

from ragmeter.errors import ConfigError, clip
from ragmeter.store import ResultRow, Store
from ragmeter.store.lookup import LIKE_ESCAPE, like_pattern
from ragmeter.wire import MetricDistribution, NullReason, RowScore, RowView

__all__ = [
    "MAX_BINS",
    "MAX_REASONS",
    "TEXT_CHARS",
    "RowFilter",
    "distribution",
    "row_page",
]

#: a histogram has at most this many bins
MAX_BINS = 50
#: null reasons listed per metric (the most frequent first); the rest are counted
MAX_REASONS = 20
#: a row's query and response are cut to this many characters in a page of rows
TEXT_CHARS = 400
#: a null reason is grouped by (and shown with) this many characters of its message
_REASON_CHARS = 300


class RowFilter(BaseModel):
    """Which rows of a run, in what order. ``metric`` is the one sorted by, compared to
    ``below`` and tested by ``failures_first`` (every metric of the row when unset)."""

    metric: str | None = None
    sort: Literal["row", "score"] = "row"
    order: Literal["asc", "desc"] = "asc"
    failures_first: bool = False
    below: float | None = None
    text: str | None = None


def _check(metrics: list[str], chosen: RowFilter) -> str:
    """The metric the page is anchored on (one result per row), after checking the filter."""
    if chosen.metric is not None and chosen.metric not in metrics:
        known = ", ".join(metrics)
        raise ConfigError(
            f"metric: this run has no metric '{clip(chosen.metric)}' (it has {known})"
        )
    if chosen.metric is None and (chosen.sort == "score" or chosen.below is not None):
        what = "sort=score" if chosen.sort == "score" else "below"
        raise ConfigError(f"metric: {what} needs a metric (one of {', '.join(metrics)})")
    if not metrics:
        raise ConfigError("metric: this run has no metrics")
    return chosen.metric or metrics[0]


def _conditions(anchor: Any, chosen: RowFilter) -> list[Any]:
    where: list[Any] = []
    if chosen.below is not None:
        where.append(anchor.score < chosen.below)
    if chosen.text:
        plain = like_pattern(chosen.text)
        # responses are stored as JSON with non-ASCII characters escaped
        escaped = like_pattern(json.dumps(chosen.text)[1:-1])
        prediction = cast(anchor.prediction, String)
        where.append(
            or_(
                anchor.query.ilike(plain, escape=LIKE_ESCAPE),
                anchor.raw_dataset["response"].as_string().ilike(plain, escape=LIKE_ESCAPE),
                prediction.ilike(plain, escape=LIKE_ESCAPE),
                prediction.ilike(escaped, escape=LIKE_ESCAPE),
            )
        )
    return where


def _order(anchor: Any, run_id: str, chosen: RowFilter) -> list[Any]:
    order: list[Any] = []
    if chosen.failures_first:
        if chosen.metric is not None:
            failed = or_(anchor.score.is_(None), anchor.passing.is_(False))
        else:
            other = aliased(ResultRow)
            failed = exists().where(
                other.run_id == run_id,
                other.row_index == anchor.row_index,
                or_(other.score.is_(None), other.passing.is_(False)),
            )
        order.append(failed.desc())
    descending = chosen.order == "desc"
    if chosen.sort == "score":
        order += [anchor.score.is_(None), anchor.score.desc() if descending else anchor.score]
        order.append(anchor.row_index)
    else:
        order.append(anchor.row_index.desc() if descending else anchor.row_index)
    return order


def _response(given: str | None, prediction: Any) -> str:
    """The row's response: the dataset's, else what the target answered (an app's answer,
    a retriever's ids)."""
    if given is None and prediction is None:
        return ""
    value = given if given is not None else prediction
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:TEXT_CHARS]


def row_page(
    store: Store, run_id: str, metrics: list[str], chosen: RowFilter, offset: int, limit: int
) -> tuple[list[RowView], int]:
    """A page of the run's rows and how many match: one query picks the page's row indexes
    (on the run/metric/score index), one reads their results."""
    metric = _check(metrics, chosen)
    anchor = aliased(ResultRow)
    where = [anchor.run_id == run_id, anchor.metric_name == metric, *_conditions(anchor, chosen)]
    with store.session() as session:
        total = session.scalar(select(func.count()).select_from(anchor).where(*where)) or 0
        picked = select(anchor.row_index).where(*where).order_by(*_order(anchor, run_id, chosen))
        indexes = list(session.scalars(picked.offset(offset).limit(limit)))
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
                ResultRow.raw_dataset["response"].as_string(),
            ).where(and_(ResultRow.run_id == run_id, ResultRow.row_index.in_(indexes)))
        ).all()
    rows: dict[int, RowView] = {}
    for index, name, score, passing, error, kind, query, prediction, given in found:
        row = rows.get(index)
        if row is None:
            row = rows[index] = RowView(
                row_index=index,
                query=query[:TEXT_CHARS],
                response=_response(given, prediction),
                scores={},
            )
        row.scores[name] = RowScore(score=score, passing=passing, error=error, error_kind=kind)
    return [rows[i] for i in indexes if i in rows], total


def _histogram(scores: np.ndarray[Any, Any], bins: int) -> tuple[list[float], list[int]]:
    if not len(scores):
        return [], []
    low, high = float(scores.min()), float(scores.max())
    if low >= 0.0 and high <= 1.0:
        low, high = 0.0, 1.0
    elif low == high:
        low, high = low - 0.5, high + 0.5
    counts, edges = np.histogram(scores, bins=bins, range=(low, high))
    return [round(float(e), 6) for e in edges], [int(c) for c in counts]


def distribution(store: Store, run_id: str, metric: str, bins: int) -> MetricDistribution:
    """One metric's histogram (scores on [0, 1] when they all lie there) and null reasons,
    read from that metric's results only."""
    where = [ResultRow.run_id == run_id, ResultRow.metric_name == metric]
    reason = func.substr(ResultRow.error, 1, _REASON_CHARS)
    with store.session() as session:
        scores = session.scalars(select(ResultRow.score).where(*where, ResultRow.score.isnot(None)))
        values = np.fromiter(scores, dtype=np.float64)
        nulls = session.scalar(
            select(func.count()).select_from(ResultRow).where(*where, ResultRow.score.is_(None))
        )
        grouped = session.execute(
            select(ResultRow.error_kind, reason, func.count())
            .where(*where, ResultRow.score.is_(None))
            .group_by(ResultRow.error_kind, reason)
            .order_by(func.count().desc(), ResultRow.error_kind, reason)
            .limit(MAX_REASONS)
        ).all()
    edges, counts = _histogram(values, bins)
    listed = [NullReason(error_kind=k, reason=r, count=n) for k, r, n in grouped]
    other = int(nulls or 0) - sum(item.count for item in listed)
    return MetricDistribution(
        metric_name=metric, edges=edges, counts=counts, nulls=listed, other_nulls=other
    )
