"""Runs: evaluating a dataset with metrics, through one executor, kept in memory or stored.

Names load on first use, so ``ragmeter.runs.config`` (what an evaluation is) stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names

if TYPE_CHECKING:
    from ragmeter.runs.api import aevaluate, evaluate
    from ragmeter.runs.config import EvaluationConfig
    from ragmeter.runs.gating import GateResult, gate
    from ragmeter.runs.scoring import MetricLike, check_rows, resolve_metrics
    from ragmeter.runs.stored import StoredRun, load_run
    from ragmeter.runs.trec import TrecEvaluation, evaluate_trec

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.runs.api": ("aevaluate", "evaluate"),
        "ragmeter.runs.config": ("EvaluationConfig",),
        "ragmeter.runs.gating": ("GateResult", "gate"),
        "ragmeter.runs.scoring": ("MetricLike", "check_rows", "resolve_metrics"),
        "ragmeter.runs.stored": ("StoredRun", "load_run"),
        "ragmeter.runs.trec": ("TrecEvaluation", "evaluate_trec"),
    },
)


__all__ = [
    "EvaluationConfig",
    "GateResult",
    "MetricLike",
    "StoredRun",
    "TrecEvaluation",
    "aevaluate",
    "check_rows",
    "evaluate",
    "evaluate_trec",
    "gate",
    "load_run",
    "resolve_metrics",
]
