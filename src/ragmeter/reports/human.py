"""People's values of a report's rows on one metric, and the metric's mean corrected by
them (``reports.calibrated``): what ``EvaluationReport.summary`` adds as
``calibrated_mean`` where a metric has labels."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ragmeter.reports.calibrated import CalibratedMean, calibrated_mean
from ragmeter.reports.stats import Note

__all__ = ["HumanLabels", "calibrate", "left_out_note", "summary_fields"]


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
    #: labelled rows left out: review queues picked them by a rule without chance
    #: (nearest the threshold, failures) or they were labelled outside the queues, so no
    #: correction holds for them
    left_out: int = 0


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
    found = calibrated_mean(scores, labelled, values, inclusion=inclusion, confidence=confidence)
    said = left_out_note(human)
    if said is None:
        return found
    text = said if found.note is None else f"{found.note.text}; {said}"
    values_of = {} if found.note is None else dict(found.note.values)
    note = Note("calibrated_left_out", text, {**values_of, "left_out": human.left_out})
    return replace(found, note=note)


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


def left_out_note(human: HumanLabels) -> str | None:
    """What to say of the labelled rows the correction leaves out, if any."""
    if not human.left_out:
        return None
    return (
        f"{human.left_out} labelled rows left out: picked by a review rule without chance "
        "(nearest the threshold, failures, disagreement) or labelled outside the queues"
    )
