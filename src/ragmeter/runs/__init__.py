"""Runs: evaluating a dataset with metrics, through one executor, kept in memory or stored."""

from ragmeter.runs.api import aevaluate, evaluate
from ragmeter.runs.config import EvaluationConfig
from ragmeter.runs.evaluate import MetricLike, check_rows, resolve_metrics

__all__ = [
    "EvaluationConfig",
    "MetricLike",
    "aevaluate",
    "check_rows",
    "evaluate",
    "resolve_metrics",
]
