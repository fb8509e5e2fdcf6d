"""A run looked at row by row: a page of its rows (sorted, filtered) read with indexed SQL, and
each metric's score distribution and null reasons, without loading every result in Python."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel
from sqlalchemy import select

from ragmeter.datasets import Row
from ragmeter.errors import ConfigError, LimitError, NotFoundError, clip
from ragmeter.metrics.retrieval import NOT_JUDGED
from ragmeter.metrics.retrieval.ranking import judge_rows
from ragmeter.runs.storage.result_columns import score_column
from ragmeter.runs.storage.result_pages import RowQuery, page_results, pick_rows
from ragmeter.runs.storage.result_store import (
    neighbours,
    null_reasons,
    row_records,
    stored_rows,
)
from ragmeter.runs.views.trajectory import trajectory_of
from ragmeter.store.db import Store
from ragmeter.store.models import RunRecord
from ragmeter.store.search import bounded, catch_up
from ragmeter.wire.rows import (
    MetricDistribution,
    NullReason,
    RowContext,
    RowDetail,
    RowResult,
    RowScore,
    RowView,
)

__all__ = [
    "MAX_BINS",
    "MAX_REASONS",
    "TEXT_CHARS",
    "RowFilter",
    "SearchLimits",
    "distribution",
    "row_detail",
    "row_page",
]

#: a histogram has at most this many bins
MAX_BINS = 50
#: null reasons listed per metric (the most frequent first); the rest are counted
MAX_REASONS = 20
#: a row's query and response are cut to this many characters in a page of rows
TEXT_CHARS = 400


@dataclass(frozen=True)
class SearchLimits:
    """How much row search one server allows: ``seconds`` for one search (its SQL), and
    ``at_once`` searches at a time in this process (``[server] search_seconds``,
    ``max_searches``)."""

    seconds: float = 5.0
    at_once: int = 4


@functools.cache
def _gate(at_once: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(at_once)


@contextmanager
def _searching(limits: SearchLimits) -> Iterator[None]:
    """A turn among the process's searches (429 naming the setting when none frees within a
    second: a waiting search holds a thread, never a database connection)."""
    gate = _gate(limits.at_once)
    if not gate.acquire(timeout=1.0):
        raise LimitError(
            f"{limits.at_once} row searches are running; try again when one is done",
            setting=f"[server] max_searches = {limits.at_once}",
            status=429,
        )
    try:
        yield
    finally:
        gate.release()


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


def _response(given: str | None, prediction: Any) -> str:
    """The row's response: the dataset's, else what the target answered (an app's answer,
    a retriever's ids)."""
    if given is None and prediction is None:
        return ""
    value = given if given is not None else prediction
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:TEXT_CHARS]


def row_page(
    store: Store,
    run_id: str,
    metrics: list[str],
    chosen: RowFilter,
    offset: int,
    limit: int,
    limits: SearchLimits = SearchLimits(),
) -> tuple[list[RowView], int]:
    """A page of the run's rows and how many match: one query picks the page's row indexes
    (on the run/metric/score index), one reads their results. A text search (``chosen.text``)
    takes a turn among ``limits.at_once`` and stops after ``limits.seconds``."""
    if not chosen.text:
        return _page(store, run_id, metrics, chosen, offset, limit)
    with _searching(limits):
        if metrics:  # rows stored since the run was last searched are indexed first
            catch_up(store.engine, run_id, metrics[0])
        return _page(store, run_id, metrics, chosen, offset, limit, limits.seconds)


def _page(
    store: Store,
    run_id: str,
    metrics: list[str],
    chosen: RowFilter,
    offset: int,
    limit: int,
    seconds: float | None = None,
) -> tuple[list[RowView], int]:
    metric = _check(metrics, chosen)
    asked = RowQuery(
        metric=metric,
        sort=chosen.sort,
        descending=chosen.order == "desc",
        failures_first=chosen.failures_first,
        any_metric=chosen.metric is None,
        below=chosen.below,
        text=chosen.text,
    )
    with store.session() as session:
        dataset_id = _dataset_of(session, run_id)
        with _limited(session, seconds):
            indexes, total = pick_rows(session, run_id, dataset_id, asked, offset, limit)
        found = page_results(session, run_id, dataset_id, indexes)
    # a row's response is its first metric's answer (metrics may cut a ranked list apart)
    rank = {name: i for i, name in enumerate(metrics)}
    found.sort(key=lambda r: rank.get(r.metric_name, len(rank)))
    rows: dict[int, RowView] = {}
    for result in found:
        row = rows.get(result.row_index)
        if row is None:
            row = rows[result.row_index] = RowView(
                row_index=result.row_index,
                query=result.query[:TEXT_CHARS],
                response=_response(result.given, result.prediction),
                scores={},
            )
        row.scores[result.metric_name] = RowScore(
            score=result.score,
            passing=result.passing,
            error=result.error,
            error_kind=result.error_kind,
        )
    return [rows[i] for i in indexes if i in rows], total


def _limited(session: Any, seconds: float | None) -> AbstractContextManager[None]:
    if seconds is None:
        return nullcontext()
    return bounded(session, seconds, f"[server] search_seconds = {seconds:g}")


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
    with store.session() as session:
        column = score_column(session, run_id, metric)
        values = column.scores[~np.isnan(column.scores)]
        nulls = column.nulls()
        grouped = null_reasons(session, run_id, metric, MAX_REASONS)
    edges, counts = _histogram(values, bins)
    listed = [NullReason(error_kind=k, reason=r, count=n) for k, r, n in grouped]
    other = int(nulls or 0) - sum(item.count for item in listed)
    return MetricDistribution(
        metric_name=metric, edges=edges, counts=counts, nulls=listed, other_nulls=other
    )


def _strings(value: Any) -> list[str] | None:
    """``value`` when it is a list of strings (a stored row's contexts or ids), else None."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _retrieved(raw: dict[str, Any], found: list[Any]) -> tuple[list[str] | None, list[str] | None]:
    """The row's retrieved texts and ids: the dataset's, else what a target gave the metrics
    (an LLM metric's contexts; a retrieval metric's list, cut to its k)."""
    texts, ids = _strings(raw.get("retrieved_contexts")), _strings(raw.get("retrieved_ids"))
    if texts is None:
        scored = (r.contexts for r in found if isinstance(r.prediction, str))
        texts = next((c for c in map(_strings, scored) if c is not None), None)
    if texts is None and ids is None:
        lists = (_strings(r.prediction) for r in found)
        texts = next((p for p in lists if p is not None), None)
    return texts, ids


Match = Literal["id", "exact"]


def _grades(value: Any) -> dict[str, int] | None:
    """``value`` when it is a stored row's graded relevance (text ids to whole numbers)."""
    if isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(g, int) and not isinstance(g, bool)
        for k, g in value.items()
    ):
        return value
    return None


def _relevance(
    query: str, raw: dict[str, Any], texts: list[str] | None, ids: list[str] | None, level: int
) -> tuple[Match | None, list[bool], list[int | None], int | None]:
    """How relevance is matched (the ranking metrics' ``auto`` rule: ids when the row has
    retrieved ids and judged ids, else exact text), each retrieved item's relevance at the
    run's relevance level and its grade, and how many relevant items the row names; (None,
    [], [], None) when the row names no reference."""
    reference_ids = _strings(raw.get("reference_ids"))
    grades = _grades(raw.get("reference_relevance"))
    reference_texts = _strings(raw.get("reference_contexts"))
    match: Match
    if ids is not None and (reference_ids is not None or grades is not None):
        match = "id"
        row = Row(
            query=query or "-",
            retrieved_ids=ids,
            reference_ids=reference_ids,
            reference_relevance=grades,
        )
    elif texts is not None and reference_texts is not None:
        match = "exact"
        row = Row(query=query or "-", retrieved_contexts=texts, reference_contexts=reference_texts)
    else:
        return None, [], [], None
    judged = judge_rows([row], match).whole
    # grades are shown for graded rows only: ids and texts alone are all of grade 1
    shown = [
        None if g == NOT_JUDGED or grades is None else int(g) for g in judged.grades[0].tolist()
    ]
    relevant = judged.relevant(level)[0].tolist()
    return match, relevant, shown, int(judged.n_relevant(level)[0])


def _contexts(
    texts: list[str] | None,
    ids: list[str] | None,
    relevant: list[bool] | None,
    grades: list[int | None],
) -> list[RowContext]:
    """The retrieved items in rank order, each with its text, id, relevance and grade."""

    def at(values: list[Any] | None, rank: int) -> Any:
        return values[rank] if values is not None and rank < len(values) else None

    width = max(len(texts or ()), len(ids or ()))
    return [
        RowContext(
            rank=r + 1,
            text=at(texts, r),
            id=at(ids, r),
            relevant=at(relevant, r),
            grade=at(grades, r) if relevant is not None else None,
        )
        for r in range(width)
    ]


def _dataset_of(session: Any, run_id: str) -> int:
    """The id of the run's dataset (0 for no such run: no row is joined)."""
    found = session.scalar(select(RunRecord.dataset_id).where(RunRecord.id == run_id))
    return int(found or 0)


def _level(session: Any, run_id: str) -> int:
    """The run's relevance level (1 for runs stored before there was one)."""
    spec = session.scalar(select(RunRecord.spec).where(RunRecord.id == run_id))
    level = spec.get("relevance_level") if isinstance(spec, dict) else None
    return level if isinstance(level, int) and not isinstance(level, bool) and level >= 1 else 1


def row_detail(store: Store, run_id: str, row_index: int) -> RowDetail:
    """Row ``row_index`` of a run in full, with every metric's result and reasoning;
    NotFoundError naming the index when the run holds no such row."""
    with store.session() as session:
        found = row_records(session, run_id, _dataset_of(session, run_id), [row_index])
        if not found:
            count = stored_rows(session, run_id)
            raise NotFoundError(
                f"row_index: run '{clip(run_id)}' has no row {row_index} "
                f"({count} rows stored, numbered from 0)"
            )
        previous, following = neighbours(session, run_id, row_index)
        level = _level(session, run_id)
    first = found[0]
    raw = first.raw_dataset if isinstance(first.raw_dataset, dict) else {}
    texts, ids = _retrieved(raw, found)
    match, relevant, grades, total = _relevance(first.query, raw, texts, ids, level)
    response = raw.get("response")
    trajectory = trajectory_of(raw)
    if not isinstance(response, str) and trajectory is not None:  # the agent's last reply
        replies = [s.content for s in trajectory.steps if s.role == "assistant" and s.content]
        response = replies[-1] if replies else None
    if not isinstance(response, str):
        response = next((r.prediction for r in found if isinstance(r.prediction, str)), None)
    reference = raw.get("reference")
    return RowDetail(
        row_index=row_index,
        query=first.query,
        response=response,
        reference=reference if isinstance(reference, str) else None,
        contexts=_contexts(texts, ids, relevant if match is not None else None, grades),
        match=match,
        relevant_total=total,
        relevance_level=level,
        results=[
            RowResult(
                metric_name=r.metric_name,
                judged=r.cost is not None,
                score=r.score,
                passing=r.passing,
                feedback=r.feedback,
                error=r.error,
                error_kind=r.error_kind,
                details=r.details,
            )
            for r in found
        ],
        previous=previous,
        next=following,
        trajectory=trajectory,
    )
