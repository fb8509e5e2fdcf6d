"""trec_eval's table: the values of its measures per query and over all queries (``all``),
from ragmeter's per-row scores, and the text ``trec_eval -q`` prints for them.

Over all queries a measure is the mean of its query values, their sum (the counts: ``num_q``,
``num_ret``, ...) or their geometric mean (``gm_map``, ``gm_bpref``: ``exp`` of the mean of
``log(max(value, 1e-5))``), summed in query order as trec_eval does. ``runid`` is the run's
id and ``relstring`` the first grades of each ranking, written here: neither is a metric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.errors import RagmeterError
from ragmeter.metrics.retrieval.trec import TrecMeasure

__all__ = ["MIN_GEO_MEAN", "TrecValues", "format_trec", "relstring", "trec_values"]

#: the floor of a query value in a geometric mean (trec_eval's ``MIN_GEO_MEAN``)
MIN_GEO_MEAN = 1e-5

#: one value of a measure: a number, or the text of ``runid`` and ``relstring``
Value = float | int | str
#: per query (query id -> trec name -> value) and over all queries (trec name -> value)
TrecValues = tuple[dict[str, dict[str, Value]], dict[str, Value]]


def relstring(ranking: Sequence[str], grades: Mapping[str, int], length: int) -> str:
    """The first ``length`` grades of a ranking as trec_eval writes them: the grade's digit,
    ``>`` above 9, ``-`` for a document not in the qrels, ``.`` for a negative grade."""
    marks = []
    for docid in ranking[:length]:
        grade = grades.get(docid)
        if grade is None:
            marks.append("-")
        elif grade < 0:
            marks.append(".")
        else:
            marks.append(">" if grade > 9 else str(grade))
    return "".join(marks)


def _query_values(
    measure: TrecMeasure,
    rows: Sequence[Mapping[str, Any]],
    scores: Mapping[str, Sequence[float | None]],
) -> list[Value]:
    if measure.spec is None:
        if measure.name.startswith("relstring"):
            length = measure.length or 10
            return [relstring(r["retrieved_ids"], r["reference_relevance"], length) for r in rows]
        return []  # runid: one value for the run, no value per query
    values: list[Value] = []
    for row, score in zip(rows, scores[measure.spec], strict=True):
        if score is None:
            raise RagmeterError(
                f"{measure.name} ({measure.spec}) has no value for query {row['query']!r}"
            )
        values.append(round(score) if measure.integer else score)
    return values


def _aggregate(measure: TrecMeasure, values: Sequence[Value]) -> Value:
    """The ``all`` value: summed one query at a time, in order, as trec_eval adds them."""
    total = 0.0
    if measure.aggregate == "gmean":
        for value in values:
            total += math.log(max(float(value), MIN_GEO_MEAN))
        return math.exp(total / len(values))
    for value in values:
        total += float(value)
    if measure.aggregate == "sum":
        return round(total) if measure.integer else total
    return total / len(values)


def trec_values(
    measures: Sequence[TrecMeasure],
    rows: Sequence[Mapping[str, Any]],
    scores: Mapping[str, Sequence[float | None]],
    runid: str,
) -> TrecValues:
    """The table of ``measures`` for ``rows`` (one per query, with ``retrieved_ids`` and
    ``reference_relevance``), given each spec's per-row ``scores`` in row order."""
    per_query: dict[str, dict[str, Value]] = {str(row["query"]): {} for row in rows}
    over_all: dict[str, Value] = {}
    for measure in measures:
        if measure.spec is None and not measure.name.startswith("relstring"):
            over_all[measure.name] = runid
            continue
        values = _query_values(measure, rows, scores)
        if measure.per_query:
            for row, value in zip(rows, values, strict=True):
                per_query[str(row["query"])][measure.name] = value
        if measure.spec is not None:
            over_all[measure.name] = _aggregate(measure, values)
    return per_query, over_all


def _line(name: str, qid: str, value: Value) -> str:
    if isinstance(value, str):
        text = f"'{value}'" if name.startswith("relstring") else value
    elif isinstance(value, int):
        text = str(value)
    else:
        text = f"{value:6.4f}"
    return f"{name:<22}\t{qid}\t{text}\n"


def format_trec(
    measures: Sequence[TrecMeasure], values: TrecValues, *, per_query: bool = True
) -> str:
    """What ``trec_eval -q`` prints (without ``-q`` when ``per_query`` is false): each
    query's lines in query order, then the ``all`` lines, measures in trec_eval's order."""
    by_query, over_all = values
    lines = []
    if per_query:
        for qid, found in by_query.items():
            lines += [_line(m.name, qid, found[m.name]) for m in measures if m.name in found]
    lines += [_line(m.name, "all", over_all[m.name]) for m in measures if m.name in over_all]
    return "".join(lines)
