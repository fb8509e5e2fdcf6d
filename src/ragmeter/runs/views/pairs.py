"""Two stored runs compared: per metric statistics, and row by row for one metric the pairs,
largest regression first, paged, and a scatter of their scores whose size is bounded however
large the runs are. Each run's results of a metric are read as columns (``runs.views.sides``) and
paired in numpy. Rows pair as ``runs.views.compare`` pairs them: by ``id`` when
every result of both runs has one, else by query text; the n-th occurrence of a key pairs
with the n-th in the other run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ragmeter.errors import ConfigError, clip
from ragmeter.runs.storage.result_columns import has_row_ids
from ragmeter.runs.storage.result_store import calibrated_means, row_texts
from ragmeter.runs.views.browse import TEXT_CHARS
from ragmeter.runs.views.compare import (
    TIE,
    Pairing,
    Side,
    check_options,
    compare_sides,
    pair_positions,
)
from ragmeter.runs.views.sides import read_side
from ragmeter.store.db import Store
from ragmeter.store.models import RunRecord
from ragmeter.wire.compare import MetricComparison, RowPair, RowPairPage, Scatter, ScatterPoint

__all__ = [
    "GRID",
    "MAX_POINTS",
    "Chosen",
    "choose",
    "compare_runs",
    "pair_page",
    "scatter",
]

#: a scatter holds at most this many points; past it, counts on a grid
MAX_POINTS = 2_000
#: cells per axis of a scatter's grid (GRID * GRID <= MAX_POINTS)
GRID = 40


def pairing(session: Session, base: tuple[str, list[str]], other: tuple[str, list[str]]) -> Pairing:
    """By id when every result of both runs (each a run id and its metrics) has one, else by
    query text: ``compare._pairing``'s rule, answered by seeking the pair index."""
    both = has_row_ids(session, *base) and has_row_ids(session, *other)
    return "id" if both else "query"


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


@dataclass(frozen=True)
class _Pairs:
    """The pairs of one metric as columns: each side's row index and score (NaN where null)
    and the difference (candidate - baseline; NaN where either is null)."""

    base_idx: np.ndarray[Any, Any]
    other_idx: np.ndarray[Any, Any]
    base_score: np.ndarray[Any, Any]
    other_score: np.ndarray[Any, Any]

    @property
    def delta(self) -> np.ndarray[Any, Any]:
        found: np.ndarray[Any, Any] = self.other_score - self.base_score
        return found


def _pairs(store: Store, chosen: Chosen) -> _Pairs:
    """The results of ``metric`` of both runs paired (the n-th occurrence of a key with the
    n-th), as ``compare_scores`` pairs them."""
    with store.session() as session:
        base, base_rows = read_side(session, chosen.base_id, chosen.metric, chosen.by)
        other, other_rows = read_side(session, chosen.other_id, chosen.metric, chosen.by)
    ia, ib = pair_positions(base.keys, other.keys)
    return _Pairs(base_rows[ia], other_rows[ib], base.scores[ia], other.scores[ib])


def compare_runs(
    store: Store,
    base: tuple[str, list[str]],
    other: tuple[str, list[str]],
    *,
    alpha: float = 0.05,
    margin: float | None = None,
) -> list[MetricComparison]:
    """``compare_scores`` of two stored runs (each its id and metric names), read metric by
    metric from the pair index: what the service, the HTML report and ``ragmeter runs
    compare`` compare runs with (family-wise intervals; ``margin`` for equivalence)."""
    check_options(alpha, margin)
    names = list(dict.fromkeys([*base[1], *other[1]]))
    with store.session() as session:
        by = pairing(session, base, other)
        sides = {
            name: (_held(session, base, name, by), _held(session, other, name, by))
            for name in names
        }
    found = compare_sides(sides, by, alpha=alpha, margin=margin)
    return _with_calibrated(store, base, other, found)


def _with_calibrated(
    store: Store,
    base: tuple[str, list[str]],
    other: tuple[str, list[str]],
    found: list[MetricComparison],
) -> list[MetricComparison]:
    """``found`` with each run's mean corrected by its human labels, where it has some."""
    with store.session() as session:
        records = {run: session.get(RunRecord, run) for run in (base[0], other[0])}
    corrected = {
        run: calibrated_means(store, record, [c.metric_name for c in found])
        for run, record in records.items()
        if record is not None
    }
    if not any(corrected.values()):
        return found

    def shown(run: str, metric: str) -> dict[str, Any] | None:
        value = corrected.get(run, {}).get(metric)
        return None if value is None else value.as_dict()

    return [
        c.model_copy(
            update={
                "base_calibrated": shown(base[0], c.metric_name),
                "other_calibrated": shown(other[0], c.metric_name),
            }
        )
        for c in found
    ]


def _held(session: Session, run: tuple[str, list[str]], metric: str, by: Pairing) -> Side | None:
    """The run's results of ``metric``; None when it has none (a metric it does not have,
    or no row done yet)."""
    if metric not in run[1]:
        return None
    side, _ = read_side(session, run[0], metric, by)
    return side if len(side.keys) else None


def _texts(session: Session, chosen: Chosen, indexes: list[int]) -> dict[int, tuple[str, Any]]:
    """The candidate's query (cut short) and row id at each of ``indexes``."""
    dataset_id = session.scalar(select(RunRecord.dataset_id).where(RunRecord.id == chosen.other_id))
    found = row_texts(session, chosen.other_id, dataset_id or 0, chosen.metric, TEXT_CHARS, indexes)
    return {index: (text.query, text.row_id) for index, text in found.items()}


def pair_page(
    store: Store, chosen: Chosen, *, regressions_only: bool, offset: int, limit: int
) -> RowPairPage:
    """A page of the pairs (largest regression first: the most negative delta, nulls
    last, then the candidate's row order) and how many there are; only the pairs that got
    worse with ``regressions_only``."""
    pairs = _pairs(store, chosen)
    delta = pairs.delta
    chosen_rows = np.flatnonzero(delta < -TIE) if regressions_only else np.arange(len(delta))
    part = delta[chosen_rows]
    nulls = np.isnan(part)
    order = np.lexsort((pairs.other_idx[chosen_rows], np.where(nulls, 0.0, part), nulls))
    page = chosen_rows[order[offset : offset + limit]]
    with store.session() as session:
        texts = _texts(session, chosen, [int(i) for i in pairs.other_idx[page]])
    items = []
    for i in page:
        query, row_id = texts.get(int(pairs.other_idx[i]), ("", None))
        items.append(
            RowPair(
                key=row_id if chosen.by == "id" else query,
                base_index=int(pairs.base_idx[i]),
                other_index=int(pairs.other_idx[i]),
                query=query,
                base_score=_number(pairs.base_score[i]),
                other_score=_number(pairs.other_score[i]),
                delta=_number(delta[i]),
            )
        )
    total = len(chosen_rows)
    return RowPairPage(items=items, total=total, offset=offset, limit=limit, paired_by=chosen.by)


def _number(value: float) -> float | None:
    """A score for the wire: None for NaN (a null)."""
    return None if np.isnan(value) else float(value)


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
    """Each distinct (x, y) with how many pairs sit on it, in (x, y) order; None past
    ``MAX_POINTS``. The pairs are sorted as complex numbers (x + iy): ten times faster than
    ``np.unique`` of rows."""
    pairs = x.astype(np.complex128)
    pairs.imag = y  # not x + 1j * y: 1j * inf is nan + inf j
    found, counts = np.unique(pairs, return_counts=True)
    if len(found) > MAX_POINTS:
        return None
    return [
        ScatterPoint(x=float(point.real), y=float(point.imag), count=int(n))
        for point, n in zip(found.tolist(), counts.tolist(), strict=True)
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
    pairs = _pairs(store, chosen)
    both = ~(np.isnan(pairs.base_score) | np.isnan(pairs.other_score))
    x, y = pairs.base_score[both], pairs.other_score[both]
    low, high = _span(x, y)
    points = _points(x, y)
    common = {"metric_name": chosen.metric, "paired": len(x), "low": low, "high": high}
    if points is not None:
        return Scatter(mode="points", points=points, paired_by=chosen.by, **common)
    grid = _grid(x, y, low, high)
    return Scatter(mode="grid", points=grid, grid=GRID, paired_by=chosen.by, **common)
