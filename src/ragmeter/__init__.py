"""ragmeter: evaluate RAG pipelines and LLM agents with numbers you can trust."""

from ragmeter.datasets import Dataset, Row, load_dataset
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
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.runs import aevaluate, evaluate

__version__ = "0.1.0"

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
