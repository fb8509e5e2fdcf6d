"""Runs: evaluating a dataset with metrics, through one executor, kept in memory or stored.

Names load on first use, so ``ragmeter.runs.config`` (what an evaluation is) stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names

if TYPE_CHECKING:
    from ragmeter.runs.api import aevaluate, evaluate
    from ragmeter.runs.config import EvaluationConfig
    from ragmeter.runs.scoring import MetricLike, check_rows, resolve_metrics

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.runs.api": ("aevaluate", "evaluate"),
        "ragmeter.runs.config": ("EvaluationConfig",),
        "ragmeter.runs.scoring": ("MetricLike", "check_rows", "resolve_metrics"),
    },
)


__all__ = [
    "EvaluationConfig",
    "MetricLike",
    "aevaluate",
    "check_rows",
    "evaluate",
    "resolve_metrics",
]
