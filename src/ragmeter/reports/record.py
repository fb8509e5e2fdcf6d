"""One row x one metric: ``ResultRecord``, ragmeter's one result record (reports, the run store
and the API are made from it), and ``BaseEvaluationResult``, what a DB-GPT-style metric returns
for one row."""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = ["BaseEvaluationResult", "ResultRecord", "json_default"]


class BaseEvaluationResult(BaseModel):
    """What a metric returns for one row (DB-GPT's fields plus ``feedback``).

    A ``score`` of ``None`` means "no score"; ``feedback`` should then say why.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    prediction: Any = None
    contexts: Any = None
    score: float | None = 0.0
    passing: bool | None = None
    metric_name: str | None = None
    prediction_cost: int = 0
    feedback: str | None = None


@dataclass(slots=True)
class ResultRecord:
    """One row x one metric. ``score`` is null exactly when ``error`` says why."""

    row_index: int
    metric_name: str
    score: float | None
    passing: bool | None
    feedback: str | None
    error: str | None
    prediction: Any
    contexts: Any
    prediction_cost: int
    query: str
    raw_dataset: dict[str, Any]
    #: judge usage charged to this result: requests, cached, tokens, latency_ms (None: no judge)
    cost: dict[str, float] | None = None
    #: why ``score`` is null: upstream (judge, embedder or app failed; a retry may help),
    #: input (the row's data decides it) or metric (a bug); None for a score
    error_kind: str | None = None
    #: the judge's reasoning (``ragmeter.reports.details``); None: not recorded (an older
    #: run, or a metric with no reasoning to show)
    details: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_attributes(cls, source: Any) -> ResultRecord:
        """A record from any object with the same attribute names (a stored result row, an
        API result item); fields with a default may be missing (an older server's item)."""
        values: dict[str, Any] = {}
        for name, spec in cls.__dataclass_fields__.items():
            if spec.default is MISSING:
                values[name] = getattr(source, name)
            else:
                values[name] = getattr(source, name, spec.default)
        return cls(**values)


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback: numpy scalars and arrays as numbers and lists, NaN as null."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
