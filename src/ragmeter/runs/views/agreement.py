"""A stored run's agreement with its human labels, per metric and per row language (all
rows, then each language: ``judge.tasks.detect_language`` of the row's query and
response): the judge's scores against each reviewer and against the reviewers' majority
(``reports.agreement.judge_agreement``), Krippendorff's alpha among the reviewers (the
ceiling), and the metric's mean corrected by the labels (``reports.calibrated``). A plain
JSON-able dict, for the API, the command line, the dashboard and the report.

A metric's kind follows its values: pass/fail when every score and label is 0 or 1; graded
(ordinal, on the metric's scale's integers) when the scale reaches past 1 and every value is
a whole number (DB-GPT's 0-5); else continuous (Spearman, and the pass/fail statistics at
``threshold`` when one is given). The corrected mean takes each labelled row's mean over its
reviewers (as the run's summary does), and assumes the labelled rows were picked at random
among the run's rows (the review queue's random rule): a stratified pick needs its
inclusion probabilities, which the labels do not record. Where the run's target filled the
rows it judged (a retriever, an app), only the labels made on this run count
(``runs.storage.labels.own_rows_only``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError, clip
from ragmeter.judge.tasks import detect_language
from ragmeter.metrics.scales import format_scale, metric_scale
from ragmeter.reports.agreement import Kind, Level, judge_agreement, majority, reviewers_alpha
from ragmeter.reports.human import calibrate
from ragmeter.runs.storage.labels import Label, LabelStore, labels_of, own_rows_only, picked
from ragmeter.runs.storage.result_columns import score_column
from ragmeter.runs.storage.result_store import row_texts
from ragmeter.runs.storage.store import metric_names
from ragmeter.store.db import Store
from ragmeter.store.models import RunRecord

__all__ = ["ALL_LANGUAGES", "TEXT_CHARS", "run_agreement"]

#: characters of a row's query and of its response read to tell its language
TEXT_CHARS = 200
#: the group of every row, before the groups of each language
ALL_LANGUAGES = "all"
_LEVEL: dict[Kind, Level] = {"binary": "nominal", "ordinal": "ordinal", "continuous": "interval"}


@dataclass(frozen=True)
class _Scores:
    """One metric's judged scores by row position (NaN: null) and each row's language."""

    positions: np.ndarray
    scores: np.ndarray
    languages: list[str]


def _languages(store: Store, record: RunRecord, metric: str) -> dict[int, str]:
    """Each row's language (by position), from the start of its query and response."""
    with store.session() as session:
        texts = row_texts(session, record.id, record.dataset_id, metric, TEXT_CHARS)
    return {index: detect_language(t.query, t.response) for index, t in texts.items()}


def _read_scores(store: Store, record: RunRecord, metric: str, known: dict[int, str]) -> _Scores:
    """The metric's scores in row order; ``known`` (position -> language) is read once per
    run and reused by the next metric (a run's metrics score the same rows)."""
    with store.session() as session:
        column = score_column(session, record.id, metric)
    positions, scores = column.rows, column.scores
    if any(int(p) not in known for p in positions):
        known.update(_languages(store, record, metric))
    return _Scores(positions, scores, [known[int(p)] for p in positions])


def _kind(values: np.ndarray, metric: str) -> tuple[Kind, list[float] | None]:
    """The statistics' kind from the values seen and the metric's scale, with an ordinal
    scale's categories."""
    seen = values[~np.isnan(values)]
    if np.all((seen == 0.0) | (seen == 1.0)):
        return "binary", None
    scale = metric_scale(metric)
    whole = bool(np.all(seen == np.round(seen)))
    if scale is not None and scale[1] is not None and scale[1] > 1 and whole:
        low = scale[0] if scale[0] is not None else float(seen.min())
        if scale[1] - low <= 20:
            return "ordinal", [float(v) for v in np.arange(low, scale[1] + 1)]
    return "continuous", None


def _matrix(labels: list[Label], positions: np.ndarray, reviewers: list[str]) -> np.ndarray:
    """Units (the run's rows, in ``positions`` order) x reviewers, NaN: not labelled."""
    row_of_position = {int(p): i for i, p in enumerate(positions)}
    column = {name: j for j, name in enumerate(reviewers)}
    matrix = np.full((len(positions), len(reviewers)), np.nan)
    for label in labels:
        i = row_of_position.get(label.position)
        if i is not None:
            matrix[i, column[label.reviewer]] = label.value
    return matrix


def _group(
    judge: np.ndarray,
    matrix: np.ndarray,
    reviewers: list[str],
    kind: Kind,
    options: dict[str, Any],
    positions: np.ndarray,
) -> dict[str, Any]:
    """Agreement, alpha and the corrected mean over one group of rows (at ``positions``)."""
    labelled = np.flatnonzero((~np.isnan(matrix)).any(axis=1))
    common = {
        "kind": kind,
        "categories": options["categories"],
        "threshold": options["threshold"],
        "resamples": options["resamples"],
        "seed": options["seed"],
    }
    found = [
        judge_agreement(judge, matrix[:, j], against=name, **common).as_dict()
        for j, name in enumerate(reviewers)
    ]
    alpha = None
    if len(reviewers) > 1:
        vote = majority(matrix, kind=kind, threshold=options["threshold"])
        found.append(judge_agreement(judge, vote, against="majority", **common).as_dict())
        level = _LEVEL[kind]
        stat = reviewers_alpha(
            matrix, level=level, resamples=options["resamples"], seed=options["seed"]
        )
        alpha = stat.as_dict()
    with np.errstate(invalid="ignore"):
        human = np.nanmean(matrix[labelled], axis=1) if len(labelled) else np.empty(0)
    rows = [int(p) for p in positions[labelled]]
    values = {row: [float(v)] for row, v in zip(rows, human, strict=True)}
    corrected = calibrate(positions, judge, labels_of(values, options["chances"]))
    return {
        "rows": int(np.count_nonzero(~np.isnan(judge))),
        "labelled_rows": len(labelled),
        "agreement": found,
        "reviewers_alpha": alpha,
        "calibrated_mean": corrected.as_dict(),
    }


def _metric(
    store: Store, record: RunRecord, metric: str, labels: list[Label], options: dict[str, Any]
) -> dict[str, Any]:
    reviewers = sorted({label.reviewer for label in labels})
    scale = metric_scale(metric)
    out: dict[str, Any] = {
        "metric": metric,
        "scale": None if scale is None else format_scale(scale),
        "kind": None,
        "threshold": options["threshold"],
        "reviewers": reviewers,
        "labels": len(labels),
        "groups": [],
    }
    if not reviewers:
        return out
    scores = _read_scores(store, record, metric, options["languages"])
    matrix = _matrix(labels, scores.positions, reviewers)
    kind, categories = _kind(np.concatenate([scores.scores, matrix.ravel()]), metric)
    out["kind"] = kind
    by_language: dict[str, list[int]] = defaultdict(list)
    for i, language in enumerate(scores.languages):
        by_language[language].append(i)
    groups = [(ALL_LANGUAGES, np.arange(len(scores.positions)))]
    groups += [(lang, np.array(rows)) for lang, rows in sorted(by_language.items())]
    if len(by_language) < 2:
        groups = groups[:1]
    chances = options["picked"].get(metric)
    out["sampling"] = "random" if chances is None else "inclusion probabilities"
    settings = {**options, "categories": categories, "chances": chances}
    for language, rows in groups:
        part = _group(
            scores.scores[rows], matrix[rows], reviewers, kind, settings, scores.positions[rows]
        )
        out["groups"].append({"language": language, **part})
    return out


def run_agreement(
    store: Store,
    record: RunRecord,
    *,
    metric: str | None = None,
    threshold: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The run's agreement with the human labels of its dataset version's rows, per metric
    of the run (only ``metric``, when given: ConfigError naming the run's metrics unless it
    has it); a metric without labels has no kind and no groups."""
    names = metric_names(record)
    if metric is not None and metric not in names:
        raise ConfigError(
            f"run '{record.id}' has no metric '{clip(metric)}' (it has: {', '.join(names)})"
        )
    chosen = [metric] if metric is not None else names
    found: dict[str, list[Label]] = defaultdict(list)
    own = own_rows_only(record)  # a target filled the rows: only this run's labels count
    for label in LabelStore(store).of_dataset(record.dataset_id, metric=metric):
        if not own or label.run_id == record.id:
            found[label.metric].append(label)
    languages: dict[int, str] = {}
    with store.session() as session:
        queues = picked(session, record.id)
    options = {
        "threshold": threshold,
        "resamples": resamples,
        "seed": seed,
        "languages": languages,
        "picked": queues,
    }
    return {
        "run_id": record.id,
        "dataset_id": record.dataset_id,
        "metrics": [_metric(store, record, name, found[name], options) for name in chosen],
    }
