"""The steps of an evaluation: metrics from names, rows checked against what every metric
needs (before any work), rows scored, results recorded; ``runs.api`` and the executor use them."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragmeter._specs import split_specs
from ragmeter.datasets import Dataset, Row
from ragmeter.errors import ConfigError, DatasetError, MetricError, error_kind
from ragmeter.judge.usage import Usage
from ragmeter.metrics.base import EvaluationMetric, LLMEvaluationMetric
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import create_metric
from ragmeter.reports import ResultColumns, ResultRecord
from ragmeter.runs.planning.targets import RowFailure, Target

__all__ = [
    "MetricLike",
    "build_records",
    "check_judge",
    "check_rows",
    "prepare_rows",
    "resolve_metrics",
    "score_rows",
    "usage_since",
    "usage_snapshot",
]

MetricLike = str | EvaluationMetric[Any, Any] | type[EvaluationMetric[Any, Any]]


def resolve_metrics(
    metrics: str | Iterable[MetricLike], *, top_k: int | None = None
) -> list[EvaluationMetric[Any, Any]]:
    """Turn names (``"mrr@10,ndcg@10"`` or a list), instances or classes into metric instances."""
    items: list[Any] = split_specs(metrics) if isinstance(metrics, str) else list(metrics)
    if not items:
        raise MetricError("no metrics given")
    resolved: list[EvaluationMetric[Any, Any]] = []
    for item in items:
        if isinstance(item, str):
            metric = create_metric(item, top_k=top_k)
        elif isinstance(item, EvaluationMetric):
            metric = item
        elif isinstance(item, type) and issubclass(item, EvaluationMetric):
            metric = item()
        else:
            raise MetricError(
                f"expected a metric name, EvaluationMetric instance or class, got {item!r}"
            )
        metric.check_implemented()
        resolved.append(metric)
    counts = Counter(m.metric_name for m in resolved)
    duplicates = sorted(name for name, n in counts.items() if n > 1)
    if duplicates:
        raise MetricError(f"metric given twice: {', '.join(duplicates)}")
    return resolved


def check_rows(
    dataset: Dataset,
    metrics: Sequence[EvaluationMetric[Any, Any]],
    rows: Dataset | Sequence[Row] | None = None,
) -> None:
    """Raise ``DatasetError`` for the first row lacking what a metric needs, before any work.
    ``rows`` are the dataset's rows as a target will fill them, if not the dataset itself.
    Built-in metrics check whole columns; the row found is then described row by row."""
    table = dataset if rows is None else Dataset.of(rows)
    first: tuple[int, EvaluationMetric[Any, Any]] | None = None
    for metric in metrics:
        index = metric.first_lacking(table)
        if index is not None and (first is None or index < first[0]):
            first = (index, metric)
    if first is None:
        return
    index, metric = first
    missing = metric.missing_fields(table[index]) or "a field"
    raise DatasetError(
        f"metric '{metric.metric_name}' needs {missing}, which this row lacks",
        row=index,
        field=missing.split()[0],
        source=dataset.source,
        line=dataset.line_of(index),
    )


_PLACEHOLDERS: dict[str, Any] = {
    "response": "",
    "retrieved_contexts": [],
    "retrieved_ids": [],
    "reference_contexts": [],
    "reference_ids": [],
    "messages": (),
}


def _preview(rows: Dataset, provides: frozenset[str]) -> Dataset:
    """Rows as they will look once a target filled its fields (for checking them early)."""
    return rows.with_columns(
        {f: [_PLACEHOLDERS[f]] * len(rows) for f in provides if f in _PLACEHOLDERS}
    )


async def _outcomes(
    metric: EvaluationMetric[Any, Any], rows: Dataset, ctx: EvaluationContext
) -> ResultColumns:
    """One metric's results as columns; a metric that fails as a whole fails every row with
    its reason, so nothing is lost."""
    try:
        results = await metric.compute_rows(rows, ctx)
    except Exception as exc:  # the metric failed as a whole: every row says why
        ctx.advance(len(rows))
        reason, kind = f"{type(exc).__name__}: {exc}", error_kind(exc)
        return ResultColumns.failed(metric.metric_name, len(rows), reason, kind)
    if not isinstance(results, ResultColumns) or len(results) != len(rows):
        got = (
            f"{len(results)} results"
            if isinstance(results, ResultColumns)
            else type(results).__name__
        )
        reason = f"metric returned {got} for {len(rows)} rows"
        return ResultColumns.failed(metric.metric_name, len(rows), reason, "metric")
    results.metric_name = metric.metric_name
    return results


def check_judge(judge: Any, metrics: Sequence[EvaluationMetric[Any, Any]], hint: str = "") -> None:
    """ConfigError when a metric needs a judge and none was given (``hint`` says how)."""
    if judge is None:
        needing = [
            m.metric_name for m in metrics if isinstance(m, LLMEvaluationMetric) and m.judge is None
        ]
        if needing:
            raise ConfigError(
                f"metrics {', '.join(needing)} need a judge model; none was given{hint}"
            )


def prepare_rows(
    dataset: Dataset, metrics: Sequence[EvaluationMetric[Any, Any]], target: Target | None
) -> Dataset:
    """The rows as the target takes them (doc names resolved), checked against what every
    metric needs once the target has filled its fields."""
    if target is None:
        check_rows(dataset, metrics)
        return dataset
    prepared = Dataset(target.prepare(dataset), dataset.source, dataset.lines)
    check_rows(dataset, metrics, _preview(prepared, target.provides))
    return prepared


async def score_rows(
    metrics: Sequence[EvaluationMetric[Any, Any]],
    rows: Dataset | Sequence[Row | RowFailure],
    ctx: EvaluationContext,
    failures: Mapping[int, str] | None = None,
) -> list[ResultColumns]:
    """Each metric's results over ``rows``, as columns in row order. A row the target failed
    (a ``RowFailure`` in ``rows``, or a reason in ``failures`` by row) fails every metric with that
    reason, as an upstream failure (the app or retriever, worth a retry)."""
    if isinstance(rows, Dataset):
        failed = dict(failures or {})
        positions = [i for i in range(len(rows)) if i not in failed]
        ready = rows.take(positions) if failed else rows
    else:
        failed = {i: row.reason for i, row in enumerate(rows) if isinstance(row, RowFailure)}
        positions = [i for i, row in enumerate(rows) if isinstance(row, Row)]
        ready = Dataset([row for row in rows if isinstance(row, Row)])
    per_metric = await asyncio.gather(*(_outcomes(m, ready, ctx) for m in metrics))
    if not failed:
        return list(per_metric)
    ctx.advance(len(failed) * len(metrics))
    return [results.spread(positions, len(rows), failed) for results in per_metric]


def build_records(
    rows: Dataset | Sequence[Row],
    metrics: Sequence[EvaluationMetric[Any, Any]],
    per_metric: Sequence[ResultColumns],
    indices: Sequence[int] | None = None,
) -> list[ResultRecord]:
    """Records row by row from each metric's result columns; ``indices`` are the rows'
    places in the run (default: their positions). A row's results share one raw dict."""
    table = Dataset.of(rows)
    queries = table.column("query")
    records: list[ResultRecord] = []
    for i in range(len(table)):
        raw = table.raw(i)
        row_index = i if indices is None else indices[i]
        for metric, results in zip(metrics, per_metric, strict=True):
            record = results.record(i, row_index, queries[i], raw)
            record.metric_name = metric.metric_name
            records.append(record)
    return records


def usage_snapshot(judge: Any) -> Usage | None:
    total = getattr(judge, "total", None)
    return dataclasses.replace(total) if isinstance(total, Usage) else None


def usage_since(judge: Any, before: Usage | None, ctx: EvaluationContext) -> dict[str, float]:
    """This run's share of the judge's counters (an engine may serve several runs)."""
    usage = Usage()
    after = getattr(judge, "total", None)
    if isinstance(after, Usage) and before is not None:
        usage.add(after)
        usage.add(before, -1.0)
    usage.add(ctx.embedding_usage)
    return usage.to_dict()
