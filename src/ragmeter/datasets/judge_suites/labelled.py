"""A team's own labelled set: JSON Lines, one ragmeter row per line (``query``, ``response``,
``contexts``, ``reference``, ``metadata``, ...) plus ``human``, the people's label on the
metric's scale (1/0 for pass/fail), and optionally ``language`` (e.g. ``en``, ``zh``; found
from the text when absent) and ``groups`` (an object of str -> str, e.g. ``{"task": "qa"}``)
that the card breaks agreement down by."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ragmeter.datasets.judge_suites.base import Suite, SuiteItem, content_hash, jsonl_objects
from ragmeter.datasets.row import row_from_mapping
from ragmeter.errors import DatasetError

__all__ = ["read_labelled"]

_OWN = ("human", "language", "groups")


def _item(path: Path, number: int, index: int, obj: dict[str, Any]) -> SuiteItem:
    source = str(path)
    human = obj.get("human")
    if isinstance(human, bool) or not isinstance(human, int | float) or not math.isfinite(human):
        raise DatasetError(
            "expected a number (the human label)", field="human", source=source, line=number
        )
    language = obj.get("language")
    if language is not None and not isinstance(language, str):
        raise DatasetError(
            "expected a string such as 'en'", field="language", source=source, line=number
        )
    groups = obj.get("groups") or {}
    if not isinstance(groups, dict) or not all(isinstance(v, str) for v in groups.values()):
        raise DatasetError(
            "expected an object of strings", field="groups", source=source, line=number
        )
    fields = {k: v for k, v in obj.items() if k not in _OWN}
    row_from_mapping(
        fields, index, source=source, line=number
    )  # refuses a malformed row, naming it
    return SuiteItem(fields, float(human), language, dict(groups))


def read_labelled(path: Path, metric: str) -> Suite:
    """The rows of ``path`` with their human labels, as a suite for ``metric``."""
    if not path.is_file():
        raise DatasetError("file not found", source=str(path))
    items = [_item(path, n, i, obj) for i, (n, obj) in enumerate(jsonl_objects(path))]
    if not items:
        raise DatasetError("no labelled row", source=str(path))
    values = sorted({item.human for item in items})
    binary = set(values) <= {0.0, 1.0}
    return Suite(
        path.stem,
        metric,
        "binary" if binary else "ordinal",
        items,
        content_hash([path], metric),
        f"labelled file {path.name}",
        categories=None if binary else tuple(values),
    )
