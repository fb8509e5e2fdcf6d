"""Datasets: rows loaded from files, DataFrames or lists of dicts, validated up front and
held as columns."""

from ragmeter.datasets.loader import DatasetLimits, DatasetSource, load_dataset
from ragmeter.datasets.row import FIELD_ALIASES, Row, row_from_mapping
from ragmeter.datasets.table import FIELDS, Dataset, FieldColumn, LazyColumn

__all__ = [
    "FIELDS",
    "FIELD_ALIASES",
    "Dataset",
    "DatasetLimits",
    "DatasetSource",
    "FieldColumn",
    "LazyColumn",
    "Row",
    "load_dataset",
    "row_from_mapping",
]
