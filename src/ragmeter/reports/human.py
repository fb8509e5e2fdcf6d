"""People's values of a report's rows on one metric, and the metric's mean corrected by
them (``reports.calibrated``): what ``EvaluationReport.summary`` adds as
``calibrated_mean`` where a metric has labels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragmeter.reports.calibrated import CalibratedMean, calibrated_mean

__all__ = ["HumanLabels", "calibrate", "summary_fields"]


@dataclass(frozen=True)
class HumanLabels:
    """Per labelled row (its ``row_index``): the mean of its reviewers' values on the
    metric's scale, and the probability the row had of being picked for review (None: the
    rows were picked uniformly at random, or the labels came from a file)."""

    rows: tuple[int, ...]
    values: tuple[float, ...]
    inclusion: tuple[float, ...] | None = None
    #: how many labels the values are means of (several reviewers per row)
    labels: int = 0


def calibrate(
    row_indices: np.ndarray, scores: np.ndarray, human: HumanLabels, confidence: float = 0.95
) -> CalibratedMean:
    """The calibrated mean of a metric whose results are ``scores`` (NaN: null) of rows
    ``row_indices``; labels of rows the report does not hold are left out."""
    where = {int(row): i for i, row in enumerate(row_indices)}
    kept = [k for k, row in enumerate(human.rows) if row in where]
    labelled = np.array([where[human.rows[k]] for k in kept], dtype=np.int64)
    values = np.array([human.values[k] for k in kept], dtype=np.float64)
    inclusion = None
    if human.inclusion is not None:
        inclusion = np.array([human.inclusion[k] for k in kept], dtype=np.float64)
    return calibrated_mean(scores, labelled, values, inclusion=inclusion, confidence=confidence)


def summary_fields(found: CalibratedMean) -> dict[str, float | int | str | None]:
    """The keys a metric's summary gains: ``calibrated_mean`` with its interval
    (``calibrated_low``, ``calibrated_high``), ``labelled`` rows and the note's text."""
    return {
        "calibrated_mean": found.value,
        "calibrated_low": found.low,
        "calibrated_high": found.high,
        "labelled": found.n_labelled,
        "calibrated_note": found.note.text if found.note is not None else None,
    }
