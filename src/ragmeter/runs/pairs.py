"""Two runs row by row for one metric: the pairs, largest regression first, paged in SQL (a
self-join of the results on the pairing key), and a scatter of their scores whose size is
bounded however large the runs are. Rows pair as ``runs.compare`` pairs them: by ``id`` when
every result of both runs has one, else by query text; the n-th occurrence of a key pairs
with the n-th in the other run."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
from sqlalchemy import Subquery, and_, func, or_, select
from sqlalchemy.orm import Session, aliased

from ragmeter.errors import ConfigError, clip
from ragmeter.runs.browse import TEXT_CHARS
from ragmeter.runs.compare import TIE, Pairing
from ragmeter.store import ResultRow, Store
from ragmeter.wire import RowPair, RowPairPage, Scatter, ScatterPoint

__all__ = ["GRID", "MAX_POINTS", "Chosen", "choose", "pair_page", "scatter"]

#: a scatter holds at most this many points; past it, counts on a grid
MAX_POINTS = 2_000
#: cells per axis of a scatter's grid (GRID * GRID <= MAX_POINTS)
GRID = 40


def pairing(session: Session, base: tuple[str, list[str]], other: tuple[str, list[str]]) -> Pairing:
    """By id when every result of both runs (each a run id and its metrics) has one, else by
    query text: ``compare._pairing``'s rule, answered by seeking the pair index."""
    lacking = (
        select(ResultRow.id)
        .where(
            or_(
                and_(ResultRow.run_id == base[0], ResultRow.metric_name.in_(base[1])),
                and_(ResultRow.run_id == other[0], ResultRow.metric_name.in_(other[1])),
            ),
            ResultRow.id_key.is_(None),
        )
        .limit(1)
    )
    return "query" if session.scalar(lacking) is not None else "id"


@dataclass(frozen=True)
class Chosen:
    """Two runs and the metric compared row by row, and what their rows pair by."""

    base_id: str
    other_id: str
    metric: str
    by: Pairing


def choose(
    store: Store, base: tuple[str, list[str]], other: tuple[str, list[str]], metric: str
) -> Chosen:
    """The comparison of ``metric`` between two runs (each its id and metrics); ConfigError
    naming the metric unless both runs have it."""
    for which, names in (("baseline", base[1]), ("candidate", other[1])):
        if metric not in names:
            raise ConfigError(
                f"metric: the {which} run has no metric '{clip(metric)}' "
                f"(it has {', '.join(names) or 'none'}); choose one both runs have"
            )
    with store.session() as session:
        by = pairing(session, base, other)
    return Chosen(base[0], other[0], metric, by)


def _earlier(run_id: str, metric: str, key: Any, row: Any) -> Any:
    """How many of the run's results of ``metric`` share ``row``'s key at a lower row index
    (0 for the key's first occurrence): a range count on the key index."""
    other = aliased(ResultRow)
    mine, theirs = getattr(row, key), getattr(other, key)
    return (
        select(func.count())
        .where(
            other.run_id == run_id,
            other.metric_name == metric,
            theirs == mine,
            other.row_index < row.row_index,
        )
        .scalar_subquery()
    )


def _pairs(chosen: Chosen) -> Subquery:
    """The results of ``metric`` of both runs paired: a self-join of the results on the
    key (the candidate's walked, the baseline's sought on the key index), the n-th
    occurrence of a key with the n-th. Columns: base_idx, other_idx, base_score,
    other_score, delta (candidate - baseline)."""
    key = "id_key" if chosen.by == "id" else "query_key"
    a, b = aliased(ResultRow), aliased(ResultRow)
    on = and_(
        a.run_id == chosen.base_id,
        a.metric_name == chosen.metric,
        getattr(a, key) == getattr(b, key),
        _earlier(chosen.base_id, chosen.metric, key, a)
        == _earlier(chosen.other_id, chosen.metric, key, b),
    )
    return (
        select(
            a.row_index.label("base_idx"),
            b.row_index.label("other_idx"),
            a.score.label("base_score"),
            b.score.label("other_score"),
            (b.score - a.score).label("delta"),
        )
        .join_from(b, a, on)
        .where(b.run_id == chosen.other_id, b.metric_name == chosen.metric)
        .subquery()
    )


def _texts(session: Session, chosen: Chosen, indexes: list[int]) -> dict[int, tuple[str, Any]]:
    """The candidate's query (cut short) and row id at each of ``indexes``."""
    found = session.execute(
        select(
            ResultRow.row_index,
            func.substr(ResultRow.query, 1, TEXT_CHARS),
            ResultRow.raw_dataset["id"],
        ).where(
            ResultRow.run_id == chosen.other_id,
            ResultRow.metric_name == chosen.metric,
            ResultRow.row_index.in_(indexes),
        )
    ).all()
    return {index: (query, row_id) for index, query, row_id in found}


def pair_page(
    store: Store, chosen: Chosen, *, regressions_only: bool, offset: int, limit: int
) -> RowPairPage:
    """A page of the pairs (largest regression first: the most negative delta, nulls
    last, then the candidate's row order) and how many there are; only the pairs that got
    worse with ``regressions_only``."""
    pairs = _pairs(chosen)
    where = [pairs.c.delta < -TIE] if regressions_only else []
    order = [pairs.c.delta.is_(None), pairs.c.delta, pairs.c.other_idx]
    with store.session() as session:
        found = session.execute(
            select(pairs, func.count().over().label("total"))
            .where(*where)
            .order_by(*order)
            .offset(offset)
            .limit(limit)
        ).all()
        total = found[0].total if found else _count(session, pairs, where)
        texts = _texts(session, chosen, [row.other_idx for row in found])
    items = []
    for row in found:
        query, row_id = texts.get(row.other_idx, ("", None))
        items.append(
            RowPair(
                key=row_id if chosen.by == "id" else query,
                base_index=row.base_idx,
                other_index=row.other_idx,
                query=query,
                base_score=row.base_score,
                other_score=row.other_score,
                delta=row.delta,
            )
        )
    return RowPairPage(items=items, total=total, offset=offset, limit=limit, paired_by=chosen.by)


def _count(session: Session, pairs: Subquery, where: list[Any]) -> int:
    """How many pairs match (for a page past the end, which carries no count)."""
    return session.scalar(select(func.count()).select_from(pairs).where(*where)) or 0


def _span(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> tuple[float, float]:
    """The scatter's axis range, shared by both axes: 0-1 when every score lies there."""
    if not len(x):
        return 0.0, 1.0
    low = float(min(x.min(), y.min()))
    high = float(max(x.max(), y.max()))
    if low >= 0.0 and high <= 1.0:
        return 0.0, 1.0
    return (low - 0.5, high + 0.5) if low == high else (low, high)


def _points(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> list[ScatterPoint] | None:
    """Each distinct (x, y) with how many pairs sit on it; None past ``MAX_POINTS``."""
    found, counts = np.unique(np.stack([x, y], axis=1), axis=0, return_counts=True)
    if len(found) > MAX_POINTS:
        return None
    return [
        ScatterPoint(x=float(px), y=float(py), count=int(n))
        for (px, py), n in zip(found, counts, strict=True)
    ]


def _grid(
    x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], low: float, high: float
) -> list[ScatterPoint]:
    """Counts on a GRID x GRID grid over [low, high], each at its cell's centre."""
    counts, edges, _ = np.histogram2d(x, y, bins=GRID, range=[[low, high], [low, high]])
    centres = (edges[:-1] + edges[1:]) / 2
    cells = np.argwhere(counts > 0)
    return [
        ScatterPoint(x=float(centres[i]), y=float(centres[j]), count=int(counts[i, j]))
        for i, j in cells
    ]


def scatter(store: Store, chosen: Chosen) -> Scatter:
    """Baseline score (x) against candidate score (y) for every pair both runs scored: the
    distinct points with their counts while there are at most ``MAX_POINTS`` of them, else
    counts on a grid (mode "grid"): a deterministic answer of bounded size."""
    pairs = _pairs(chosen)
    both = and_(pairs.c.base_score.is_not(None), pairs.c.other_score.is_not(None))
    with store.session() as session:
        found = session.execute(select(pairs.c.base_score, pairs.c.other_score).where(both)).all()
    flat = chain.from_iterable(found)  # np.array over Row objects is ~20x slower
    xy = np.fromiter(flat, dtype=np.float64, count=2 * len(found)).reshape(-1, 2)
    x, y = xy[:, 0], xy[:, 1]
    low, high = _span(x, y)
    points = _points(x, y)
    common = {"metric_name": chosen.metric, "paired": len(x), "low": low, "high": high}
    if points is not None:
        return Scatter(mode="points", points=points, paired_by=chosen.by, **common)
    grid = _grid(x, y, low, high)
    return Scatter(mode="grid", points=grid, grid=GRID, paired_by=chosen.by, **common)
