"""Each metric's scale, as shown beside its name wherever scores are tabled: ``0-1`` for a
share, ``0-5`` for DB-GPT's judged AnswerRelevancyMetric, ``≥ 0`` for a count. A metric
class declares it (``EvaluationMetric.scale``); results carry only the metric's name, so the
scale is found again from the name through the registry."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from ragmeter.metrics.base import EvaluationMetric
from ragmeter.metrics.registry import entry_of

__all__ = ["format_scale", "metric_scale", "metric_scales", "scale_label", "scale_labels"]


def _number(value: float) -> str:
    return f"{value:g}"


def format_scale(scale: tuple[float | None, float | None]) -> str:
    """``0-1``, ``-1 to 1``, ``≥ 0`` or ``unbounded``."""
    low, high = scale
    if low is not None and high is not None:
        joint = " to " if low < 0 else "–"  # "-1 to 1", not "-1" en dash "1"
        return f"{_number(low)}{joint}{_number(high)}"
    if low is not None:
        return f"≥ {_number(low)}"
    if high is not None:
        return f"≤ {_number(high)}"
    return "unbounded"


def metric_scale(metric_name: str) -> tuple[float | None, float | None] | None:
    """The (low, high) scale of the metric a result is named after (a spec such as
    ``ndcg@10``, a class name, a trec_eval name such as ``P_5``), or None when the name
    resolves to no registered class that declares one (a user's metric, a renamed
    CriteriaMetric)."""
    entry = entry_of(metric_name)
    if entry is None:
        return None
    factory = entry.factory
    scale = getattr(factory, "scale", None) if inspect.isclass(factory) else None
    if not (isinstance(scale, tuple) and len(scale) == 2):
        return None
    return scale


def scale_label(metric_name: str) -> str | None:
    """``metric_scale`` as text (``0-1``), or None."""
    scale = metric_scale(metric_name)
    return None if scale is None else format_scale(scale)


def scale_labels(metric_names: Iterable[str]) -> dict[str, str]:
    """``scale_label`` of each name that has one."""
    found = {name: scale_label(name) for name in metric_names}
    return {name: label for name, label in found.items() if label is not None}


def metric_scales(metrics: Iterable[EvaluationMetric[Any, Any]]) -> dict[str, str]:
    """The scale each metric instance declares, by the name its results carry."""
    return {m.metric_name: format_scale(m.scale) for m in metrics if m.scale is not None}
