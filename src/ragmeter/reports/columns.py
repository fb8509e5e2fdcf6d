"""One metric's results over a run's rows, held as columns: what a metric's batch
computation returns and what a report keeps. Records are made only when asked for."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.errors import ErrorKind, error_kind
from ragmeter.reports.record import BaseEvaluationResult, ResultRecord

__all__ = ["NO_REASON", "ResultColumns"]

#: the reason of a null score whose metric gave none (a bug in the metric)
NO_REASON: tuple[str, ErrorKind] = ("metric returned no score and gave no reason", "metric")


@dataclass(slots=True, eq=False)
class ResultColumns:
    """Results of ``metric_name`` for ``len(scores)`` rows: ``scores`` is float64 with NaN
    where there is no score; every other field only where present (sparse by row).

    A null score always has a reason: ``errors[i]`` (reason, kind), else ``null_reason``
    (one reason for every other null, as "no relevant item" for ranking metrics).
    """

    metric_name: str
    scores: np.ndarray
    errors: dict[int, tuple[str, ErrorKind]] = field(default_factory=dict)
    null_reason: tuple[str, ErrorKind] | None = None
    passing: dict[int, bool] = field(default_factory=dict)
    feedback: dict[int, str] = field(default_factory=dict)
    #: what the metric scored per row (None: nothing for any row); may compute when read
    prediction: Sequence[Any] | None = None
    contexts: Sequence[Any] | None = None
    #: tokens charged per row (DB-GPT's ``prediction_cost``)
    cost: dict[int, int] = field(default_factory=dict)
    #: judge usage charged per row: requests, cached, tokens, latency_ms
    usage: dict[int, dict[str, float]] = field(default_factory=dict)
    #: the judge's reasoning per row (``ragmeter.reports.details``), where a metric gives it
    details: dict[int, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def empty(cls, metric_name: str, rows: int) -> ResultColumns:
        """Columns for ``rows`` rows to fill one by one (``put``, ``fail``)."""
        return cls(
            metric_name,
            np.full(rows, np.nan),
            prediction=[None] * rows,
            contexts=[None] * rows,
        )

    @classmethod
    def failed(cls, metric_name: str, rows: int, reason: str, kind: ErrorKind) -> ResultColumns:
        """Every row without a score, for one reason (the metric failed as a whole)."""
        return cls(metric_name, np.full(rows, np.nan), null_reason=(reason, kind))

    def __len__(self) -> int:
        return len(self.scores)

    def __getitem__(self, index: int) -> BaseEvaluationResult:
        """Row ``index``'s result as DB-GPT's type (a null score's reason as its feedback)."""
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        score = self.score(index)
        feedback = self.feedback.get(index)
        if score is None and feedback is None:
            feedback = self.reason(index)[0]
        return BaseEvaluationResult(
            prediction=self.prediction_of(index),
            contexts=self.contexts_of(index),
            score=score,
            passing=self.passing.get(index),
            metric_name=self.metric_name,
            prediction_cost=self.cost.get(index, 0),
            feedback=feedback,
        )

    def __iter__(self) -> Iterator[BaseEvaluationResult]:
        return map(self.__getitem__, range(len(self)))

    # -- filling, one row at a time --------------------------------------------------------

    def put(
        self,
        index: int,
        score: float | None,
        *,
        passing: bool | None = None,
        feedback: str | None = None,
        prediction: Any = None,
        contexts: Any = None,
        error: str | None = None,
        error_kind: ErrorKind | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Row ``index``'s result. A null score needs ``error``; a non-finite one is a bug in
        the metric and is kept as a null saying so. ``details``: the judge's reasoning."""
        if score is not None and not math.isfinite(score):
            error, error_kind = f"metric returned a non-finite score ({score})", "metric"
            score = None
        self.scores[index] = np.nan if score is None else float(score)
        if score is None:
            self.errors[index] = (error or NO_REASON[0], error_kind or "metric")
        if passing is not None:
            self.passing[index] = passing
        if feedback is not None:
            self.feedback[index] = feedback
        if details is not None:
            self.details[index] = details
        self.place(index, prediction, contexts)

    def fail(self, index: int, reason: str, kind: ErrorKind) -> None:
        """A null score for row ``index`` with its reason and what kind of failure it is."""
        self.scores[index] = np.nan
        self.errors[index] = (reason, kind)

    def raised(self, index: int, exc: BaseException) -> None:
        """A null score for an exception: upstream for a judge, embedder or network failure,
        metric (a bug) for anything else."""
        self.fail(index, f"{type(exc).__name__}: {exc}", error_kind(exc))

    def charge(self, index: int, usage: Mapping[str, float], tokens: int) -> None:
        """The judge work row ``index`` cost (usage counters and tokens)."""
        self.usage[index] = dict(usage)
        self.cost[index] = tokens

    def default_inputs(self, index: int, prediction: Any, contexts: Any) -> None:
        """What row ``index`` was scored on, where its result does not say."""
        given, used = self.prediction_of(index), self.contexts_of(index)
        self.place(
            index, prediction if given is None else given, contexts if used is None else used
        )

    def place(self, index: int, prediction: Any, contexts: Any) -> None:
        """What row ``index`` was scored on (its prediction and contexts)."""
        if prediction is not None or contexts is not None:
            if not isinstance(self.prediction, list) or not isinstance(self.contexts, list):
                self.prediction = _as_list(self.prediction, len(self))
                self.contexts = _as_list(self.contexts, len(self))
            self.prediction[index] = prediction
            self.contexts[index] = contexts

    # -- reading ---------------------------------------------------------------------------

    def score(self, index: int) -> float | None:
        value = float(self.scores[index])
        return None if value != value else value

    def score_list(self) -> list[float | None]:
        """Every row's score, None where there is none."""
        return [None if s != s else s for s in self.scores.tolist()]

    def null_rows(self) -> np.ndarray:
        """Indices of the rows without a score."""
        nulls: np.ndarray = np.flatnonzero(np.isnan(self.scores))
        return nulls

    def reason(self, index: int) -> tuple[str, ErrorKind]:
        """Why row ``index`` has no score, and what kind of failure it is."""
        return self.errors.get(index) or self.null_reason or NO_REASON

    def prediction_of(self, index: int) -> Any:
        return None if self.prediction is None else self.prediction[index]

    def contexts_of(self, index: int) -> Any:
        return None if self.contexts is None else self.contexts[index]

    def record(self, index: int, row_index: int, query: str, raw: dict[str, Any]) -> ResultRecord:
        """Row ``index``'s result as a record (``row_index``: its place in the run)."""
        score = self.score(index)
        error: str | None = None
        kind: str | None = None
        if score is None:
            error, kind = self.reason(index)
        return ResultRecord(
            row_index=row_index,
            metric_name=self.metric_name,
            score=score,
            passing=self.passing.get(index),
            feedback=self.feedback.get(index),
            error=error,
            prediction=self.prediction_of(index),
            contexts=self.contexts_of(index),
            prediction_cost=self.cost.get(index, 0),
            query=query,
            raw_dataset=raw,
            cost=self.usage.get(index),
            error_kind=kind,
            details=self.details.get(index),
        )

    def spread(
        self, positions: Sequence[int], rows: int, failures: Mapping[int, str]
    ) -> ResultColumns:
        """These results (of the rows at ``positions``) placed among ``rows`` rows; the rows
        in ``failures`` (a reason each: the target failed them) have an upstream null."""
        scores = np.full(rows, np.nan)
        scores[np.asarray(positions, dtype=np.int64)] = self.scores
        prediction: list[Any] = [None] * rows
        contexts: list[Any] = [None] * rows
        for local, at in enumerate(positions):
            prediction[at] = self.prediction_of(local)
            contexts[at] = self.contexts_of(local)
        errors: dict[int, tuple[str, ErrorKind]] = {
            positions[i]: self.reason(i) for i in self.null_rows().tolist()
        }
        errors.update((at, (reason, "upstream")) for at, reason in failures.items())
        return ResultColumns(
            self.metric_name,
            scores,
            errors=errors,
            passing={positions[i]: v for i, v in self.passing.items()},
            feedback={positions[i]: v for i, v in self.feedback.items()},
            prediction=prediction,
            contexts=contexts,
            cost={positions[i]: v for i, v in self.cost.items()},
            usage={positions[i]: v for i, v in self.usage.items()},
            details={positions[i]: v for i, v in self.details.items()},
        )


def _as_list(values: Sequence[Any] | None, rows: int) -> list[Any]:
    return [None] * rows if values is None else list(values)
