"""ragmeter: evaluate RAG pipelines and LLM agents with numbers you can trust.

Names are imported on first use, so ``import ragmeter`` (and the command line's start) stays
fast: the metrics, the judge and the store load only when something asks for them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names
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
    from ragmeter.runs import aevaluate, evaluate, gate, load_run
    from ragmeter.runs.trec import TrecEvaluation, evaluate_trec

__version__ = "0.1.0"

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.datasets": ("Dataset", "Row", "load_dataset"),
        "ragmeter.reports": ("EvaluationReport", "ResultRecord"),
        "ragmeter.runs": ("aevaluate", "evaluate", "gate", "load_run"),
        "ragmeter.runs.trec": ("TrecEvaluation", "evaluate_trec"),
    },
)


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
    "TrecEvaluation",
    "__version__",
    "aevaluate",
    "evaluate",
    "evaluate_trec",
    "gate",
    "load_dataset",
    "load_run",
]
