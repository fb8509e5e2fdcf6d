"""Repeated judgements (``ragmeter eval --repeats N``): the same rows scored N times, each
repeat's judge requests sent with its own ``seed`` (and cached under it), combined into one
report whose score per row and metric is the mean over the repeats; the rows whose repeats
disagree are the judge's flaky verdicts, reported beside the gate.

Per row and metric, over the repeats that gave a score: score = mean; ``passing`` = true when
more than half of the repeats with a verdict pass; null when no repeat scored (with the first
repeat's reason). The first repeat is the usual judgement (no seed: its cache is the one a
single run fills)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.runs.views.compare import TIE

__all__ = ["Disagreement", "combine_repeats", "disagreements", "seeded"]

#: repeats at most (each one costs a full evaluation's judge requests)
MAX_REPEATS = 20


@dataclass(frozen=True)
class Disagreement:
    """One row whose repeats gave different scores for one metric."""

    metric_name: str
    row_index: int
    query: str
    scores: tuple[float | None, ...]


def seeded(judge: Any, repeat: int) -> Any:
    """The judge engine for repeat ``repeat`` (0: the judge as it is): the same model and
    cache, requests sent with ``seed=repeat``. ConfigError for a judge that is not an
    engine (an object given in Python cannot be asked for another sample)."""
    if repeat == 0:
        return judge
    from ragmeter.judge.engine import JudgeEngine

    if not isinstance(judge, JudgeEngine):
        raise ConfigError("--repeats needs a judge model (a name or --judge-base-url)")
    settings = judge.settings.model_copy(update={"seed": repeat})
    return JudgeEngine(settings, cache=judge.cache)


def _mean_record(records: Sequence[ResultRecord]) -> ResultRecord:
    first = records[0]
    scores = [r.score for r in records if r.score is not None]
    verdicts = [r.passing for r in records if r.passing is not None]
    values: dict[str, Any] = {f"repeat_{i + 1}": r.score for i, r in enumerate(records)}
    details = dict(first.details or {})
    details["values"] = {**details.get("values", {}), **values}
    if not scores:
        return replace(first, details=details)
    return replace(
        first,
        score=sum(scores) / len(scores),
        passing=(2 * sum(verdicts) > len(verdicts)) if verdicts else None,
        error=None,
        error_kind=None,
        details=details,
    )


def _aligned(reports: Sequence[EvaluationReport]) -> list[list[ResultRecord]]:
    """Each result of the first report with the same row and metric's of the others."""
    first = reports[0]
    keyed = [{(r.row_index, r.metric_name): r for r in report} for report in reports[1:]]
    out = []
    for record in first:
        key = (record.row_index, record.metric_name)
        others = [found[key] for found in keyed if key in found]
        out.append([record, *others])
    return out


def combine_repeats(reports: Sequence[EvaluationReport]) -> EvaluationReport:
    """One report of the repeats: per row and metric, the mean score (see the module); the
    judge's usage and the time are the repeats' sums."""
    if not reports:
        raise ConfigError("no repeat to combine")
    if len(reports) == 1:
        return reports[0]
    first = reports[0]
    records = [_mean_record(group) for group in _aligned(reports)]
    usage: dict[str, float] | None = None
    if any(r.usage for r in reports):
        usage = {}
        for report in reports:
            for key, value in (report.usage or {}).items():
                usage[key] = usage.get(key, 0.0) + value
    seconds = sum(r.seconds for r in reports)
    combined = EvaluationReport(
        records, first.metric_names, first.rows, seconds, usage, first.target
    )
    combined.run_id = first.run_id
    combined.scales = first.scales
    return combined


def disagreements(reports: Sequence[EvaluationReport]) -> list[Disagreement]:
    """The rows whose repeats disagree: scores further apart than a tie, or a score in one
    repeat and a null in another; in row order, then metric order."""
    found = []
    for group in _aligned(reports):
        scores = tuple(r.score for r in group)
        present = [s for s in scores if s is not None]
        nulls = len(present) != len(scores)
        if (present and nulls) or (present and max(present) - min(present) > TIE):
            first = group[0]
            found.append(Disagreement(first.metric_name, first.row_index, first.query, scores))
    return found
