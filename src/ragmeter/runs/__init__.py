"""Runs: evaluating a dataset with metrics, through one executor, kept in memory or stored.

Each folder answers one question: ``planning`` (what an evaluation is and will do),
``execution`` (how it runs), ``storage`` (where runs are kept), ``views`` (what a stored run
shows) and ``gates`` (whether it passes); ``api`` and ``trec`` are the Python API. Names load
on first use, so ``ragmeter.runs.planning.config`` (what an evaluation is) stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names

if TYPE_CHECKING:
    from ragmeter.runs.api import aevaluate, evaluate
    from ragmeter.runs.gates.gate import GateResult, gate
    from ragmeter.runs.planning.config import EvaluationConfig
    from ragmeter.runs.planning.scoring import MetricLike, check_rows, resolve_metrics
    from ragmeter.runs.trec import TrecEvaluation, evaluate_trec
    from ragmeter.runs.views.stored import StoredRun, load_run

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.runs.api": ("aevaluate", "evaluate"),
        "ragmeter.runs.planning.config": ("EvaluationConfig",),
        "ragmeter.runs.gates.gate": ("GateResult", "gate"),
        "ragmeter.runs.planning.scoring": ("MetricLike", "check_rows", "resolve_metrics"),
        "ragmeter.runs.views.stored": ("StoredRun", "load_run"),
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
