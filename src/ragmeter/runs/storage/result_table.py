"""Scored batches (rows and each metric's result columns) as the store takes them, column by
column: each metric's plain results (a score of one of the run's own dataset rows, given
fields of that row and nothing else) as one record of ``result_batches``, every other result
as a tuple of the results table (JSON as text, made once), with no record per result; and
batches of a run's own rows merged back into whole columns for its report."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter._public import public_text
from ragmeter.datasets import Dataset, FieldColumn, LazyColumn
from ragmeter.metrics import EvaluationMetric
from ragmeter.reports import ResultColumns, ResultRecord
from ragmeter.runs.planning.scoring import build_records
from ragmeter.runs.storage.result_batches import (
    CONTEXTS_FIELDS,
    PREDICTION_FIELDS,
    batch_arrays,
)
from ragmeter.store.db import json_text, json_texts
from ragmeter.store.pairing import keys_of
from ragmeter.store.rowdata import cut_field, input_value

__all__ = [
    "RESULT_COLUMNS",
    "ResultGroup",
    "ResultTable",
    "ScoredBatch",
    "StoredPart",
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
    ``columns``, those of ``RESULT_COLUMNS`` that hold a value for one of them at least;
    ``positions``: each tuple's row's place in the batch."""

    columns: tuple[str, ...]
    values: list[tuple[Any, ...]]
    positions: list[int] = field(default_factory=list)

    def head(self, rows: int) -> ResultGroup:
        """The tuples of the batch's first ``rows`` rows."""
        if not self.positions:
            return ResultGroup(self.columns, self.values[:rows])
        cut = bisect_left(self.positions, rows)
        return ResultGroup(self.columns, self.values[:cut], self.positions[:cut])


@dataclass(frozen=True)
class _Plain:
    """One metric's plain results of a batch: their places in the batch (in row order) and
    the fields of the row that its prediction and contexts are."""

    metric: str
    positions: list[int]
    fields: tuple[str | None, str | None]


_NONE: np.ndarray[Any, np.dtype[np.int64]] = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class StoredPart:
    """What a batch's first rows store: rows of the results table, by metric, and records of
    ``result_batches``."""

    groups: list[ResultGroup]
    batches: list[tuple[Any, ...]]


@dataclass(frozen=True)
class ResultTable:
    """A batch's results, one group per metric in the metrics' order (the results that are
    not plain) and each metric's plain results, and the bytes each row stores (its texts,
    counted per metric)."""

    groups: list[ResultGroup]
    sizes: list[int]
    plains: list[_Plain] = field(default_factory=list)
    run_id: str = ""
    #: the batch's row indexes, its plain metrics' scores, its id keys (0: no id) and query
    #: keys, as arrays by place in the batch
    indices: np.ndarray[Any, np.dtype[np.int64]] = field(default_factory=lambda: _NONE)
    scores: list[np.ndarray[Any, np.dtype[np.float64]]] = field(default_factory=list)
    keys: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] = (_NONE, _NONE)

    def head(self, rows: int) -> StoredPart:
        """What the batch's first ``rows`` rows store."""
        batches = []
        for plain, scores in zip(self.plains, self.scores, strict=True):
            chosen = np.asarray(plain.positions, dtype=np.int64)
            chosen = chosen[chosen < rows]
            if not len(chosen):
                continue
            batches.append(
                batch_arrays(
                    self.run_id,
                    plain.metric,
                    self.indices[chosen],
                    scores[chosen],
                    self.keys[0][chosen],
                    self.keys[1][chosen],
                    plain.fields,
                )
            )
        return StoredPart([g.head(rows) for g in self.groups], batches)


def _picked(found: dict[int, Any], rows: Sequence[int], convert: Any = None) -> list[Any]:
    """``found``'s value (converted) at each of ``rows``, None where it has none."""
    if not found:
        return [None] * len(rows)
    get = found.get
    if convert is None:
        return [get(i) for i in rows]
    return [None if (v := get(i)) is None else convert(v) for i in rows]


def _texts(values: Sequence[Any] | None, rows: Sequence[int]) -> list[str | None]:
    """The JSON texts of a prediction or contexts column at ``rows``."""
    if values is None:
        return [None] * len(rows)
    return json_texts([values[i] for i in rows])


def _metric_columns(columns: ResultColumns, rows: list[int]) -> list[list[Any]]:
    """One metric's values at the batch's places ``rows``, column by column in ``_OWN``'s
    order."""
    picked = columns.scores[np.asarray(rows, dtype=np.int64)]
    scores = [None if s != s else s for s in picked.tolist()]
    errors: list[str | None] = [None] * len(rows)
    kinds: list[str | None] = [None] * len(rows)
    public: dict[str, str] = {}
    for at in np.flatnonzero(np.isnan(picked)).tolist():
        reason, kinds[at] = columns.reason(rows[at])
        errors[at] = public.get(reason) or public.setdefault(reason, public_text(reason))
    cost = columns.cost
    costs = [int(cost.get(i) or 0) for i in rows] if cost else [0] * len(rows)
    return [
        scores,
        _picked(columns.passing, rows, bool),
        _picked(columns.feedback, rows),
        errors,
        kinds,
        _texts(columns.prediction, rows),
        _texts(columns.contexts, rows),
        costs,
        _picked(columns.usage, rows, json_text),
        _picked(columns.details, rows, json_text),
    ]


def result_table(
    run_id: str, batch: ScoredBatch, names: Sequence[str], *, measure: bool = True
) -> ResultTable:
    """The batch's results as the store takes them. A row keeps its own copy only when it
    is not the run's dataset row (``batch.stored`` false: a target filled it); a result of
    such a row is never plain. ``measure``: count what each row stores (else ``sizes`` is
    empty). Only results that are not plain become tuples (and Python values at all): a
    plain one is its row's place, score and keys in the batch's arrays."""
    table = Dataset.of(batch.rows)
    rows = len(batch.indices)
    queries = table.column("query")
    ids = [extra.get("id") if extra else None for extra in table.column("extra")]
    keys = keys_of(queries, ids)
    groups: list[ResultGroup] = []
    plains: list[_Plain] = []
    all_scores: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    sizes = [0] * rows if measure else []
    indices = np.asarray(batch.indices, dtype=np.int64)
    order = np.argsort(indices, kind="stable")
    everyone: list[int] = order.tolist()
    for name, columns in zip(names, batch.columns, strict=True):
        plain, rest = _plain(name, table, columns, order) if batch.stored else (None, everyone)
        if plain is not None:
            plains.append(plain)
            all_scores.append(columns.scores)
        data = _rest_columns(run_id, name, batch, table, keys, columns, rest)
        kept = tuple(
            c for c in RESULT_COLUMNS if c in _ALWAYS or any(v is not None for v in data[c])
        )
        values = list(zip(*(data[c] for c in kept), strict=True))
        groups.append(ResultGroup(kept, values, rest))
        if measure:
            _count(sizes, data, rest)
    return ResultTable(groups, sizes, plains, run_id, indices, all_scores, keys)


def _rest_columns(
    run_id: str,
    name: str,
    batch: ScoredBatch,
    table: Dataset,
    keys: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
    columns: ResultColumns,
    rest: list[int],
) -> dict[str, list[Any]]:
    """Each of ``RESULT_COLUMNS`` of one metric's results at the batch's places ``rest``
    (those that are not plain), in ``rest``'s order."""
    picked = np.asarray(rest, dtype=np.int64)
    given = keys[0][picked]
    id_keys: list[int | None] = given.tolist()
    for at in np.flatnonzero(given == 0).tolist():
        id_keys[at] = None  # no id
    queries = table.column("query")
    data: dict[str, list[Any]] = {
        "run_id": [run_id] * len(rest),
        "row_index": [batch.indices[i] for i in rest],
        "metric_name": [name] * len(rest),
        "query": [queries[i] for i in rest],
        "raw_dataset": (
            [None] * len(rest) if batch.stored else [json_text(table.raw(i)) for i in rest]
        ),
        "id_key": id_keys,
        "query_key": keys[1][picked].tolist(),
    }
    data.update(zip(_OWN, _metric_columns(columns, rest), strict=True))
    return data


def _same(
    values: Sequence[Any] | None, field: str | None, table: Dataset
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Whether each row's value is its field ``field`` (None: the value is None too)."""
    if field is None:
        if values is None:
            return np.ones(len(table), dtype=bool)
        return np.fromiter((v is None for v in values), dtype=bool, count=len(values))
    given = table.column(field)
    if values is None:
        return np.fromiter((v is None for v in given), dtype=bool, count=len(given))
    return np.fromiter(
        (a == b for a, b in zip(values, given, strict=True)), dtype=bool, count=len(given)
    )


def _field(values: Sequence[Any] | None, names: Sequence[str], table: Dataset) -> str | None:
    """The field of the rows that ``values`` are, judged on the first value there is (None:
    there is none, or no field is it)."""
    first = next((i for i, v in enumerate(values or ()) if v is not None), None)
    if values is None or first is None:
        return None
    return next((n for n in names if table.column(n)[first] == values[first]), None)


def _inputs(
    values: Sequence[Any] | None, names: Sequence[str], table: Dataset
) -> tuple[str | None, np.ndarray[Any, np.dtype[np.bool_]]]:
    """The field of the rows that ``values`` are, as ``cut_field`` names it (None: there
    is none), and at which rows each value is it. A ``FieldColumn`` of one of ``names``
    says so itself: only the rows it does not mark are compared."""
    if isinstance(values, FieldColumn) and values.same.any():  # else another field it may be
        name = next((n for n in names if table.column(n) is values.field), None)
        if name is not None:
            field = cut_field(name, values.cut)
            same = np.array(values.same, dtype=bool)
            given = values.field
            for i in np.flatnonzero(~same).tolist():
                same[i] = values[i] == input_value({name: given[i]}, field)
            return field, same
    found = _field(values, names, table)
    return found, _same(values, found, table)


def _plain(
    name: str, table: Dataset, columns: ResultColumns, order: np.ndarray[Any, Any]
) -> tuple[_Plain | None, list[int]]:
    """A metric's plain results of a batch of the run's own rows: those with a score and no
    verdict, feedback, cost or reasoning, whose prediction and contexts are fields of their
    row (the first row's fields for all); None when there is none. Also the places of the
    other results, in ``order``."""
    prediction, same_prediction = _inputs(columns.prediction, PREDICTION_FIELDS, table)
    contexts, same_contexts = _inputs(columns.contexts, CONTEXTS_FIELDS, table)
    fields = (prediction, contexts)
    plain = ~np.isnan(columns.scores)
    plain &= same_prediction
    plain &= same_contexts
    said = [i for i, text in columns.feedback.items() if text is not None]
    charged = [i for i, tokens in columns.cost.items() if int(tokens or 0)]
    for marked in (columns.passing, said, columns.usage, columns.details, charged):
        if marked:  # the few rows with a verdict, feedback, reasoning or cost
            plain[np.fromiter(marked, dtype=np.int64, count=len(marked))] = False
    chosen = plain[order]
    positions: list[int] = order[chosen].tolist()
    rest: list[int] = order[~chosen].tolist()
    return (_Plain(name, positions, fields) if positions else None), rest


def _count(sizes: list[int], data: dict[str, list[Any]], rows: list[int]) -> None:
    """Add to each row's size what one metric's result of it stores: its prediction,
    contexts, row copy and reasoning (``data``: the results at the batch's places ``rows``;
    a plain result stores none of these)."""
    for column in ("prediction", "contexts", "raw_dataset", "details"):
        for i, text in zip(rows, data[column], strict=True):
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
    if any(part.prediction is not None or part.contexts is not None for part in parts):
        merged.prediction, merged.contexts = _merged_inputs(parts, batches, rows)
    return merged


def _merged_inputs(
    parts: list[ResultColumns], batches: Sequence[ScoredBatch], rows: int
) -> tuple[LazyColumn[Any], LazyColumn[Any]]:
    """The parts' predictions and contexts as columns over the ``rows`` rows, each read from
    its part when asked for (a copy of every row's took a second for 200,000 rows)."""
    owner = np.full(rows, -1, dtype=np.int64)
    offset = np.zeros(rows, dtype=np.int64)
    for number, batch in enumerate(batches):
        at = np.asarray(batch.indices, dtype=np.int64)
        owner[at] = number
        offset[at] = np.arange(len(at))
    owners, offsets = owner.tolist(), offset.tolist()

    def prediction(row: int) -> Any:
        part = owners[row]
        return None if part < 0 else parts[part].prediction_of(offsets[row])

    def contexts(row: int) -> Any:
        part = owners[row]
        return None if part < 0 else parts[part].contexts_of(offsets[row])

    return LazyColumn(rows, prediction), LazyColumn(rows, contexts)
