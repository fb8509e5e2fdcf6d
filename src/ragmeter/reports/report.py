"""The result of an evaluation: one record per row x metric, with scores, summary and export."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter.errors import NotFoundError
from ragmeter.reports._bootstrap import bootstrap_mean_ci

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvaluationReport", "MetricSummary", "ResultRecord", "json_default"]

MetricSummary = dict[str, float | int | None]


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


class EvaluationReport:
    """Results of ``evaluate``: ``scores``, ``summary``, ``to_pandas``, ``to_jsonl``."""

    def __init__(
        self,
        records: list[ResultRecord],
        metric_names: list[str],
        rows: int,
        seconds: float,
        usage: dict[str, float] | None = None,
        target: str | None = None,
    ) -> None:
        self._records = records
        #: what produced the predictions (a retriever, an app), if not the rows themselves
        self.target = target
        #: what the run cost the judge and the embedder (None when no judge was used)
        self.usage = usage
        self.metric_names = list(metric_names)
        self.rows = rows
        self.seconds = seconds
        #: the stored run these results belong to (None: kept in memory only)
        self.run_id: str | None = None
        self._by_metric: dict[str, list[ResultRecord]] = {name: [] for name in metric_names}
        for record in records:
            self._by_metric[record.metric_name].append(record)

    def __iter__(self) -> Iterator[ResultRecord]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"EvaluationReport({self.rows} rows x {len(self.metric_names)} metrics)"

    def results(self, metric_name: str | None = None) -> list[ResultRecord]:
        """Records of one metric in row order, or all records (row by row)."""
        if metric_name is None:
            return list(self._records)
        return list(self._metric(metric_name))

    def _metric(self, metric_name: str) -> list[ResultRecord]:
        try:
            return self._by_metric[metric_name]
        except KeyError:
            raise NotFoundError(
                f"no metric '{metric_name}' in this report; it has: {', '.join(self.metric_names)}"
            ) from None

    def scores(self, metric_name: str) -> list[float | None]:
        """One score per row, in row order; None where the metric gave no score."""
        return [r.score for r in self._metric(metric_name)]

    def errors(self, metric_name: str | None = None) -> list[ResultRecord]:
        """Records with a null score (each carries its reason in ``error``)."""
        return [r for r in self.results(metric_name) if r.score is None]

    def summary(
        self, *, confidence: float = 0.95, resamples: int = 1000
    ) -> dict[str, MetricSummary]:
        """Per metric: mean, count of scores, count of nulls and a bootstrap CI of the mean.

        Null scores are excluded from the mean and counted in ``null``.
        """
        out: dict[str, MetricSummary] = {}
        for name in self.metric_names:
            scores = [s for s in self.scores(name) if s is not None]
            values = np.asarray(scores, dtype=np.float64)
            nulls = len(self._by_metric[name]) - len(scores)
            if len(values) == 0:
                out[name] = {
                    "mean": None,
                    "count": 0,
                    "null": nulls,
                    "ci95_low": None,
                    "ci95_high": None,
                }
                continue
            low, high = bootstrap_mean_ci(values, confidence=confidence, resamples=resamples)
            out[name] = {
                "mean": float(values.mean()),
                "count": len(values),
                "null": nulls,
                "ci95_low": low,
                "ci95_high": high,
            }
        return out

    def to_pandas(self) -> pd.DataFrame:
        """One DataFrame row per row x metric, with the record fields as columns."""
        import pandas as pd

        columns = list(ResultRecord.__dataclass_fields__)
        return pd.DataFrame([r.to_dict() for r in self._records], columns=columns)

    def to_jsonl(
        self,
        path: str | Path,
        *,
        extra: Mapping[str, Any] | None = None,
        append: bool = False,
    ) -> Path:
        """Write one JSON line per row x metric (row by row) and return the path. ``extra``
        fields (e.g. ``{"retriever": "bm25"}``) go into every line."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a" if append else "w", encoding="utf-8") as handle:
            for record in self._records:
                line = {**extra, **record.to_dict()} if extra else record.to_dict()
                handle.write(json.dumps(line, ensure_ascii=False, default=json_default))
                handle.write("\n")
        return target


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback: numpy scalars and arrays as numbers and lists, NaN as null."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
