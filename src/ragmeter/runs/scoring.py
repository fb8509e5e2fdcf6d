"""The steps of an evaluation: metrics from names, rows checked against what every metric
needs (before any work), rows scored, results recorded; ``runs.api`` and the executor use them."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ragmeter.datasets import Dataset, Row
from ragmeter.errors import ConfigError, DatasetError, MetricError
from ragmeter.judge.usage import Usage
from ragmeter.metrics.base import EvaluationMetric, LLMEvaluationMetric, MetricOutcome
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import create_metric
from ragmeter.reports import ResultRecord
from ragmeter.runs.targets import RowFailure, Target

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
    items: list[Any] = (
        [m.strip() for m in metrics.split(",") if m.strip()]
        if isinstance(metrics, str)
        else list(metrics)
    )
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
    rows: Sequence[Row] | None = None,
) -> None:
    """Raise ``DatasetError`` for the first row lacking what a metric needs, before any work.
    ``rows`` are the dataset's rows as a target will fill them, if not the dataset itself."""
    for index, row in enumerate(dataset if rows is None else rows):
        for metric in metrics:
            missing = metric.missing_fields(row)
            if missing is not None:
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
}


def _preview(rows: Sequence[Row], provides: frozenset[str]) -> list[Row]:
    """Rows as they will look once a target filled its fields (for checking them early)."""
    update = {f: _PLACEHOLDERS[f] for f in provides if f in _PLACEHOLDERS}
    return [row.model_copy(update=update) for row in rows]


async def _outcomes(
    metric: EvaluationMetric[Any, Any], rows: Sequence[Row], ctx: EvaluationContext
) -> list[MetricOutcome]:
    try:
        outcomes = await metric.compute_rows(rows, ctx)
    except Exception as exc:  # the metric failed as a whole: every row says why, nothing is lost
        ctx.advance(len(rows))
        return [MetricOutcome.raised(exc) for _ in rows]
    if len(outcomes) != len(rows):
        reason = f"metric returned {len(outcomes)} results for {len(rows)} rows"
        return [MetricOutcome.failed(reason, "metric") for _ in rows]
    return outcomes


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
) -> list[Row]:
    """The rows as the target takes them (doc names resolved), checked against what every
    metric needs once the target has filled its fields."""
    prepared = list(dataset) if target is None else target.prepare(dataset)
    check_rows(
        dataset, metrics, prepared if target is None else _preview(prepared, target.provides)
    )
    return prepared


async def score_rows(
    metrics: Sequence[EvaluationMetric[Any, Any]],
    rows: Sequence[Row | RowFailure],
    ctx: EvaluationContext,
) -> list[list[MetricOutcome]]:
    """Outcomes per metric per row; a row the target failed (a ``RowFailure``) fails every
    metric with that reason, as an upstream failure (the app or retriever, worth a retry)."""
    ready = [row for row in rows if isinstance(row, Row)]
    per_metric = await asyncio.gather(*(_outcomes(m, ready, ctx) for m in metrics))
    ctx.advance((len(rows) - len(ready)) * len(metrics))
    out: list[list[MetricOutcome]] = []
    for outcomes in per_metric:
        scored = iter(outcomes)
        out.append(
            [
                next(scored)
                if isinstance(row, Row)
                else MetricOutcome.failed(row.reason, "upstream")
                for row in rows
            ]
        )
    return out


def build_records(
    rows: Sequence[Row],
    metrics: Sequence[EvaluationMetric[Any, Any]],
    per_metric: Sequence[Sequence[MetricOutcome]],
    indices: Sequence[int] | None = None,
) -> list[ResultRecord]:
    raws = [row.to_raw() for row in rows]
    return [
        ResultRecord(
            row_index=i if indices is None else indices[i],
            metric_name=metric.metric_name,
            score=outcome.score,
            passing=outcome.passing,
            feedback=outcome.feedback,
            error=outcome.error if outcome.score is None else None,
            error_kind=outcome.error_kind if outcome.score is None else None,
            prediction=outcome.prediction,
            contexts=outcome.contexts,
            prediction_cost=outcome.cost,
            query=rows[i].query,
            raw_dataset=raws[i],
            cost=outcome.usage,
        )
        for i in range(len(rows))
        for metric, outcomes in zip(metrics, per_metric, strict=True)
        for outcome in (outcomes[i],)
    ]


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
