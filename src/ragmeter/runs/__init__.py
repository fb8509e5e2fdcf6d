"""Runs: evaluating a dataset with metrics."""

from ragmeter.runs.evaluate import MetricLike, aevaluate, check_rows, evaluate, resolve_metrics

__all__ = ["MetricLike", "aevaluate", "check_rows", "evaluate", "resolve_metrics"]
