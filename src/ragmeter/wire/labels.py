"""Human labels on the wire and in label files: one label names its dataset row by the row's
own ``row_id``, its ``query`` text or its ``row_index``, and gives a ``metric``, a ``value``
on the metric's scale (or ``pass``/``fail``, ``true``/``false``: 1/0), an optional
``comment`` and, where allowed, a ``reviewer``."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "LABEL_FORMATS",
    "LABEL_WORDS",
    "LabelFormat",
    "LabelIn",
    "LabelOut",
    "LabelsIn",
    "LabelsKept",
    "label_value",
]

#: words a label's value may be given as, and the number each means
LABEL_WORDS: dict[str, float] = {"pass": 1.0, "fail": 0.0, "true": 1.0, "false": 0.0}
#: how labels are written to a file or a download
LABEL_FORMATS = ("jsonl", "csv")
#: characters of a label's metric or reviewer name, and of its comment (as the store's)
_MAX_NAME = 200
_MAX_COMMENT = 2000
#: characters of a row's id or query a label may name it by
_MAX_KEY = 100_000


def label_value(value: Any) -> float:
    """A label's value as a number: a finite number, ``true``/``false``, or one of
    ``LABEL_WORDS`` (any case); ValueError saying what was given otherwise."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        word = value.strip().lower()
        if word in LABEL_WORDS:
            return LABEL_WORDS[word]
        try:
            number = float(word)
        except ValueError:
            shown = value if len(value) <= 40 else value[:37] + "..."
            raise ValueError(f"{shown!r} is not a number, pass/fail or true/false") from None
    else:
        raise ValueError(f"expected a number, pass/fail or true/false, got {type(value).__name__}")
    if not math.isfinite(number):
        raise ValueError(f"{number} is not a finite number")
    return number


class LabelIn(BaseModel):
    """One label to keep. The row is the one whose ``id`` field is ``row_id``, else the one
    whose query is ``query`` (exactly one row, or the one at ``row_index`` of several), else
    the row at ``row_index``."""

    model_config = ConfigDict(extra="forbid")

    row_id: str | int | None = Field(default=None, description="the dataset row's own id")
    query: str | None = Field(default=None, max_length=_MAX_KEY, description="its query text")
    row_index: int | None = Field(default=None, ge=0, le=2**31, description="its position")
    metric: str = Field(min_length=1, max_length=_MAX_NAME)
    value: float = Field(description="on the metric's scale; pass/fail, true/false: 1/0")
    comment: str = Field(default="", max_length=_MAX_COMMENT)
    reviewer: str | None = Field(default=None, min_length=1, max_length=_MAX_NAME)

    @field_validator("value", mode="before")
    @classmethod
    def _value(cls, value: Any) -> float:
        return label_value(value)

    @field_validator("row_id")
    @classmethod
    def _row_id(cls, value: str | int | None) -> str | int | None:
        if isinstance(value, str) and len(value) > _MAX_KEY:
            raise ValueError(f"a row id is at most {_MAX_KEY} characters")
        return value

    @model_validator(mode="after")
    def _names_a_row(self) -> LabelIn:
        if self.row_id is None and self.query is None and self.row_index is None:
            raise ValueError("a label names its row by row_id, query or row_index")
        return self


class LabelsIn(BaseModel):
    """Labels to keep, all or none (``[server] max_labels`` of them at most)."""

    model_config = ConfigDict(extra="forbid")

    labels: list[LabelIn] = Field(min_length=1)


class LabelsKept(BaseModel):
    """How many labels were kept, on which stored dataset version."""

    kept: int
    dataset_id: int


class LabelOut(BaseModel):
    """A stored label: its row (``row_index``, and the row's ``row_id`` or else its
    ``query``), metric, reviewer, value, comment, the run it was given on, and when."""

    row_index: int
    row_id: str | int | None = None
    query: str | None = None
    metric: str
    reviewer: str
    value: float
    comment: str = ""
    run_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


LabelFormat = Literal["jsonl", "csv"]
