"""ragmeter: evaluate RAG pipelines and LLM agents with numbers you can trust.

Names are imported on first use, so ``import ragmeter`` (and the command line's start) stays
fast: the metrics, the judge and the store load only when something asks for them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragmeter.errors import (
    ConfigError,
    DatasetError,
    EmbeddingError,
    JudgeError,
    MetricError,
    NotFoundError,
    RagmeterError,
    StoreError,
)

if TYPE_CHECKING:
    from ragmeter.datasets import Dataset, Row, load_dataset
    from ragmeter.reports import EvaluationReport, ResultRecord
    from ragmeter.runs import aevaluate, evaluate

__version__ = "0.1.0"

#: public name -> the module that defines it
_LAZY = {
    "Dataset": "ragmeter.datasets",
    "Row": "ragmeter.datasets",
    "load_dataset": "ragmeter.datasets",
    "EvaluationReport": "ragmeter.reports",
    "ResultRecord": "ragmeter.reports",
    "aevaluate": "ragmeter.runs",
    "evaluate": "ragmeter.runs",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmeter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ConfigError",
    "Dataset",
    "DatasetError",
    "EmbeddingError",
    "EvaluationReport",
    "JudgeError",
    "MetricError",
    "NotFoundError",
    "RagmeterError",
    "ResultRecord",
    "Row",
    "StoreError",
    "__version__",
    "aevaluate",
    "evaluate",
    "load_dataset",
]
