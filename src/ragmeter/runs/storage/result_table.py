"""Scored batches (rows and each metric's result columns) as the results table takes them,
column by column: one tuple per row x metric straight from the metrics' result columns (JSON
as text, made once), with no record per result; and batches of a run's own rows merged back
into whole columns for its report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter._public import public_text
from ragmeter.datasets import Dataset
from ragmeter.metrics import EvaluationMetric
from ragmeter.reports import ResultColumns, ResultRecord
from ragmeter.runs.planning.scoring import build_records
from ragmeter.store.db import json_text, json_texts
from ragmeter.store.pairing import keys_of

__all__ = [
    "RESULT_COLUMNS",
    "ResultGroup",
    "ResultTable",
    "ScoredBatch",
    "merged_columns",
    "result_table",
]

#: the results table's columns, in this order
RESULT_COLUMNS = (
    "run_id",
    "row_index",
    "metric_name",
    "score",
    "passing",
    "feedback",
    "error",
    "error_kind",
    "prediction",
    "contexts",
    "prediction_cost",
    "query",
    "raw_dataset",
    "cost",
    "details",
    "id_key",
    "query_key",
)
#: the columns every result is written with; each other column only where one of a metric's
#: results in the batch has a value (the rest are NULL): SQLite binds every value of an
#: INSERT, NULL or not, and binding the ten mostly-NULL columns cost as much as the rest of
#: the insert (200,000 rows x 2 metrics: 2.7 s against 1.9 s)
_ALWAYS = frozenset(
    (
        "run_id",
        "row_index",
        "metric_name",
        "score",
        "prediction_cost",
        "query",
        "id_key",
        "query_key",
    )
)
#: a metric's own columns, as ``_metric_columns`` returns them
_OWN = (
    "score",
    "passing",
    "feedback",
    "error",
    "error_kind",
    "prediction",
    "contexts",
    "prediction_cost",
    "cost",
    "details",
)


@dataclass
class ScoredBatch:
    """Rows ``indices`` of a plan (``rows``, as prepared) with each metric's result columns.
    ``stored``: the rows are the run's dataset rows as stored (no target filled them), so a
    result need not keep its own copy of its row."""

    indices: list[int]
    rows: Any
    columns: list[ResultColumns]
    stored: bool = False

    def records_by_row(
        self, metrics: Sequence[EvaluationMetric[Any, Any]]
    ) -> list[list[ResultRecord]]:
        """The batch's records grouped per row (each row's metrics in order)."""
        records = build_records(self.rows, metrics, self.columns, indices=self.indices)
        width = len(metrics)
        return [records[i : i + width] for i in range(0, len(records), width)]


@dataclass(frozen=True)
class ResultGroup:
    """One metric's results over a batch's rows: a tuple per row (in row order) of
    ``columns``, those of ``RESULT_COLUMNS`` that hold a value for one of them at least."""

    columns: tuple[str, ...]
    values: list[tuple[Any, ...]]


@dataclass(frozen=True)
class ResultTable:
    """A batch's results, one group per metric in the metrics' order, and the bytes each row
    stores (its texts, counted per metric)."""

    groups: list[ResultGroup]
    sizes: list[int]

    def head(self, rows: int) -> list[ResultGroup]:
        """The groups of the batch's first ``rows`` rows."""
        return [ResultGroup(g.columns, g.values[:rows]) for g in self.groups]


def _texts(values: Sequence[Any] | None, rows: int) -> list[str | None]:
    """JSON text of each value (None where there is none)."""
    return [None] * rows if values is None else json_texts(values)


def _spread(found: dict[int, Any], rows: int, convert: Any = None) -> list[Any]:
    out: list[Any] = [None] * rows
    for i, value in found.items():
        out[i] = value if convert is None else convert(value)
    return out


def _metric_columns(columns: ResultColumns, rows: int) -> list[list[Any]]:
    """One metric's values per row, column by column in ``_OWN``'s order."""
    scores = [None if s != s else s for s in columns.scores.tolist()]
    errors: list[str | None] = [None] * rows
    kinds: list[str | None] = [None] * rows
    public: dict[str, str] = {}
    for i in columns.null_rows().tolist():
        reason, kinds[i] = columns.reason(i)
        errors[i] = public.get(reason) or public.setdefault(reason, public_text(reason))
    costs = [0] * rows
    for i, tokens in columns.cost.items():
        costs[i] = int(tokens or 0)
    return [
        scores,
        _spread(columns.passing, rows, bool),
        _spread(columns.feedback, rows),
        errors,
        kinds,
        _texts(columns.prediction, rows),
        _texts(columns.contexts, rows),
        costs,
        _spread(columns.usage, rows, json_text),
        _spread(columns.details, rows, json_text),
    ]


def result_table(
    run_id: str, batch: ScoredBatch, names: Sequence[str], *, measure: bool = True
) -> ResultTable:
    """The batch's results as the results table takes them. A row keeps its own copy only
    when it is not the run's dataset row (``batch.stored`` false: a target filled it).
    ``measure``: count what each row stores (else ``sizes`` is empty)."""
    table = Dataset.of(batch.rows)
    rows = len(batch.indices)
    queries = table.column("query")
    ids = [extra.get("id") if extra else None for extra in table.column("extra")]
    raws: list[str | None] = (
        [None] * rows if batch.stored else [json_text(table.raw(i)) for i in range(rows)]
    )
    id_keys, query_keys = keys_of(queries, ids)
    shared: dict[str, list[Any]] = {
        "run_id": [run_id] * rows,
        "row_index": batch.indices,
        "query": queries,
        "raw_dataset": raws,
        "id_key": id_keys,
        "query_key": query_keys,
    }
    groups: list[ResultGroup] = []
    sizes = [0] * rows if measure else []
    for name, columns in zip(names, batch.columns, strict=True):
        data: dict[str, list[Any]] = {
            **shared,
            **dict(zip(_OWN, _metric_columns(columns, rows), strict=True)),
        }
        data["metric_name"] = [name] * rows
        kept = tuple(c for c in RESULT_COLUMNS if c in _ALWAYS or data[c].count(None) != rows)
        groups.append(ResultGroup(kept, list(zip(*(data[c] for c in kept), strict=True))))
        if measure:
            _count(sizes, data)
    return ResultTable(groups, sizes)


def _count(sizes: list[int], data: dict[str, list[Any]]) -> None:
    """Add to each row's size what one metric's result of it stores: its prediction,
    contexts, row copy and reasoning."""
    for column in ("prediction", "contexts", "raw_dataset", "details"):
        for i, text in enumerate(data[column]):
            if text is not None:
                sizes[i] += len(text)


def merged_columns(batches: Sequence[ScoredBatch], rows: int) -> list[ResultColumns]:
    """Each metric's columns over the ``rows`` rows the batches hold between them."""
    width = len(batches[0].columns)
    return [_merged([b.columns[m] for b in batches], batches, rows) for m in range(width)]


def _merged(parts: list[ResultColumns], batches: Sequence[ScoredBatch], rows: int) -> ResultColumns:
    reasons = {part.null_reason for part in parts}
    common = reasons.pop() if len(reasons) == 1 else None
    merged = ResultColumns(parts[0].metric_name, np.full(rows, np.nan), null_reason=common)
    for part, batch in zip(parts, batches, strict=True):
        at = batch.indices
        merged.scores[np.asarray(at, dtype=np.int64)] = part.scores
        if part.null_reason != common:
            merged.errors.update((at[i], part.reason(i)) for i in part.null_rows().tolist())
        merged.errors.update((at[i], e) for i, e in part.errors.items())
        sparse: list[tuple[dict[int, Any], dict[int, Any]]] = [
            (merged.passing, part.passing),
            (merged.feedback, part.feedback),
            (merged.cost, part.cost),
            (merged.usage, part.usage),
            (merged.details, part.details),
        ]
        for mine, theirs in sparse:
            mine.update((at[i], v) for i, v in theirs.items())
        if part.prediction is not None or part.contexts is not None:
            for i, index in enumerate(at):
                merged.place(index, part.prediction_of(i), part.contexts_of(i))
    return merged
