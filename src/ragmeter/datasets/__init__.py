"""Datasets: rows loaded from files, DataFrames or lists of dicts, validated up front."""

from ragmeter.datasets.loader import Dataset, DatasetLimits, DatasetSource, load_dataset
from ragmeter.datasets.row import FIELD_ALIASES, Row, row_from_mapping

__all__ = [
    "FIELD_ALIASES",
    "Dataset",
    "DatasetLimits",
    "DatasetSource",
    "Row",
    "load_dataset",
    "row_from_mapping",
]
