"""Relevance grades: what a grade is and how far it may go, in one place for every reader
(rows, TREC files, pytrec_eval's dicts, the batch API) and every option naming a level."""

from __future__ import annotations

import operator
from collections.abc import Collection
from typing import Any

__all__ = ["MAX_GRADE", "plain_grades", "whole_grade"]

#: the largest grade either side of 0 (2**grade - 1 stays finite; grades fit in 16 bits)
MAX_GRADE = 1000


def plain_grades(grades: Collection[Any]) -> bool:
    """Whether every grade is already an ``int`` within the limit, so none needs converting
    (C-speed passes over the values: the usual rows are checked without a Python loop)."""
    return not grades or (
        set(map(type, grades)) <= {int} and -MAX_GRADE <= min(grades) <= max(grades) <= MAX_GRADE
    )


def whole_grade(value: Any) -> int | None:
    """``value`` as a grade: an integer of any integer type (numpy's too) or an integral
    float (2.0, as pandas writes grades), within ``MAX_GRADE``; None when it is not one
    (a bool, a fraction, text, out of range)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    try:
        grade = operator.index(value)
    except TypeError:
        if hasattr(value, "is_integer") and not isinstance(value, str):  # numpy floats
            return whole_grade(float(value)) if float(value).is_integer() else None
        return None
    return grade if -MAX_GRADE <= grade <= MAX_GRADE else None
