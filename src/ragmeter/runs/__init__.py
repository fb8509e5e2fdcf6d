"""Runs: evaluating a dataset with metrics, through one executor, kept in memory or stored.

Names load on first use, so ``ragmeter.runs.config`` (what an evaluation is) stays light."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmeter.runs.api import aevaluate, evaluate
    from ragmeter.runs.config import EvaluationConfig
    from ragmeter.runs.scoring import MetricLike, check_rows, resolve_metrics

_LAZY = {
    "aevaluate": "ragmeter.runs.api",
    "evaluate": "ragmeter.runs.api",
    "EvaluationConfig": "ragmeter.runs.config",
    "MetricLike": "ragmeter.runs.scoring",
    "check_rows": "ragmeter.runs.scoring",
    "resolve_metrics": "ragmeter.runs.scoring",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmeter.runs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "EvaluationConfig",
    "MetricLike",
    "aevaluate",
    "check_rows",
    "evaluate",
    "resolve_metrics",
]
