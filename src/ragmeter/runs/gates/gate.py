"""The gate: did a change pass its rules? Absolute rules bound one statistic of the
candidate's scores; baseline rules bound the paired difference (candidate - baseline) by its
95% confidence bound, so noise alone neither fails nor passes a change. The statistics are
``reports.stats``'s (as the dashboard's compare): per metric, the mean's bootstrap CI, and
the paired differences' CI with the sign-flip test, each metric's own 95% interval and p
(no correction across metrics: the gate passes only when every rule passes, an
intersection-union test that holds its level without one; compare's verdicts, which claim
a difference on any metric, use family-wise intervals instead).

A rule's value, per statistic (null scores are left out of every one but ``null_rate``):

- ``mean``: mean of the scored rows; ``ci95_low`` / ``ci95_high``: the ends of its 95%
  bootstrap CI (the run summary's);
- ``pass_rate``: rows whose ``passing`` is true / rows with a ``passing`` verdict;
- ``null_rate``: null results / results (of the metric, or of every metric);
- ``calibrated_mean``: the mean corrected by human labels of some rows (PPI++,
  ``reports.calibrated``), ``calibrated_low`` / ``calibrated_high`` the ends of its 95%
  interval; a rule on a metric without labels fails saying so;
- ``delta``: the low end of the paired difference's 95% CI for ``>=`` and ``>``, the high
  end for ``<=`` and ``<``; rows pair by ``id`` when every row has one, else by query.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragmeter.errors import ConfigError, NotFoundError, clip
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.reports.details import cut_text
from ragmeter.reports.stats import bootstrap_mean_ci, ci_note
from ragmeter.runs.execution.repeats import Disagreement
from ragmeter.runs.gates.rules import Rule, calibrated_rules, parse_rules
from ragmeter.runs.gates.sources import full_records, load_results
from ragmeter.runs.views.compare import TIE, Pairing, compare_scores, pair_positions
from ragmeter.store.pairing import is_row_id
from ragmeter.wire.compare import MetricComparison
from ragmeter.wire.lineage import DatasetDiff

__all__ = ["GateResult", "GateRow", "RuleOutcome", "gate", "gate_reports"]

#: rows listed per failed rule (the worst first)
ROWS_PER_RULE = 10
#: characters of a query, response or reason kept in a listed row
_TEXT = 300
Verdict = Literal["pass", "fail"]


@dataclass(frozen=True)
class GateRow:
    """One row behind a failed rule: its place, texts, scores and the judge's reason."""

    row_index: int
    query: str
    response: str | None
    score: float | None
    baseline_score: float | None = None
    reason: str | None = None
    #: the metric of the result (a null_rate rule over every metric lists several)
    metric_name: str = ""

    @property
    def delta(self) -> float | None:
        if self.score is None or self.baseline_score is None:
            return None
        return self.score - self.baseline_score


@dataclass(frozen=True)
class RuleOutcome:
    """One rule judged: the value compared with its bound, the verdict, a line of detail
    (counts, CI, p-value) and the rows that fail it, the worst first."""

    rule: Rule
    value: float | None
    verdict: Verdict
    detail: str
    rows: tuple[GateRow, ...] = ()

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


@dataclass(frozen=True)
class GateResult:
    """Every rule's outcome for a candidate (and baseline); ``unpaired`` counts per metric
    the scored rows of the baseline and of the candidate that found no pair; ``flaky`` lists
    the results whose repeated judgements disagree (``ragmeter eval --repeats``)."""

    candidate: str
    baseline: str | None
    outcomes: tuple[RuleOutcome, ...]
    comparison: tuple[MetricComparison, ...] = ()
    unpaired: dict[str, tuple[int, int]] = field(default_factory=dict)
    paired_by: Pairing | None = None
    #: with repeated judgements, the results whose repeats disagree (the scores gated are
    #: the repeats' mean)
    flaky: tuple[Disagreement, ...] = ()
    #: two stored runs of different versions of a dataset: the rows added, removed, changed
    dataset_rows: DatasetDiff | None = None

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)

    @property
    def failed(self) -> list[RuleOutcome]:
        return [o for o in self.outcomes if not o.passed]


def _text(value: Any) -> str | None:
    return None if value is None else cut_text(value, _TEXT)


def _response(record: ResultRecord) -> str | None:
    if isinstance(record.prediction, str):
        return _text(record.prediction)
    raw = record.raw_dataset or {}
    return _text(raw.get("response") or raw.get("answer") or raw.get("prediction"))


def judge_reason(record: ResultRecord) -> str | None:
    """Why the row scored as it did: the null's reason, the judge's feedback, or the items
    the judge gave a negative verdict (statements not supported, contexts not useful)."""
    if record.score is None:
        return _text(record.error or "no score, no reason recorded")
    if record.feedback:
        return _text(record.feedback)
    found = []
    for group in (record.details or {}).get("groups", []):
        for item in group.get("items", []):
            if item.get("verdict") is False:
                why = f" ({item['reason']})" if item.get("reason") else ""
                found.append(f"{group.get('kind', 'item')}: {item.get('text', '')}{why}")
    return _text("; ".join(found[:3])) if found else None


def _row(record: ResultRecord, baseline: ResultRecord | None = None) -> GateRow:
    return GateRow(
        row_index=record.row_index,
        query=_text(record.query) or "",
        response=_response(record),
        score=record.score,
        baseline_score=None if baseline is None else baseline.score,
        reason=judge_reason(record),
        metric_name=record.metric_name,
    )


def _metric(report: EvaluationReport, rule: Rule, which: str) -> list[ResultRecord]:
    if rule.metric not in report.metric_names:
        raise ConfigError(
            f"gate rule '{clip(rule.text, 80)}': the {which} has no metric "
            f"'{clip(rule.metric or '')}' (it has {', '.join(report.metric_names) or 'none'})"
        )
    return report.results(rule.metric)


def _judged(
    rule: Rule, value: float | None, detail: str, rows: Callable[[], Sequence[GateRow]]
) -> RuleOutcome:
    """The outcome; ``rows`` (the worst first) are made only when the rule fails."""
    passed = value is not None and rule.holds(value)
    kept = () if passed else tuple(rows()[:ROWS_PER_RULE])
    return RuleOutcome(rule, value, "pass" if passed else "fail", detail, kept)


def _rows(report: EvaluationReport, records: Sequence[ResultRecord]) -> list[GateRow]:
    return [_row(r) for r in full_records(report, records)]


def _lowest(report: EvaluationReport, records: Sequence[ResultRecord]) -> list[GateRow]:
    """The ``ROWS_PER_RULE`` lowest scores, then nulls, ties in row order."""
    scored = heapq.nsmallest(
        ROWS_PER_RULE,
        (r for r in records if r.score is not None),
        key=lambda r: (r.score, r.row_index),
    )
    missing = [r for r in records if r.score is None][: ROWS_PER_RULE - len(scored)]
    return _rows(report, [*scored, *missing])


def _absolute(report: EvaluationReport, rule: Rule) -> RuleOutcome:
    if rule.stat == "null_rate":
        records = report.results(None) if rule.metric is None else _metric(report, rule, "run")
        missing = [r for r in records if r.score is None]
        value = len(missing) / len(records) if records else 0.0
        where = f"of {rule.metric}" if rule.metric else "of all metrics"
        detail = f"{len(missing)} of {len(records)} results {where} have no score"
        return _judged(rule, value, detail, lambda: _rows(report, missing[:ROWS_PER_RULE]))
    scores = _metric(report, rule, "run")
    if rule.stat.startswith("calibrated_"):
        return _calibrated(report, rule, scores)
    nulls = sum(r.score is None for r in scores)
    if rule.stat == "pass_rate":
        judged = [r for r in scores if r.passing is not None]
        if not judged:
            raise ConfigError(
                f"gate rule '{clip(rule.text, 80)}': {rule.metric} gives no per-row passing "
                f"verdict; bound its mean instead ('{rule.metric}.mean {rule.op} {rule.bound:g}')"
            )
        failing = [r for r in judged if not r.passing]
        value = 1.0 - len(failing) / len(judged)
        detail = f"{len(judged) - len(failing)} of {len(judged)} rows pass"
        return _judged(rule, value, detail, lambda: _lowest(report, failing))
    values = np.array([r.score for r in scores if r.score is not None], dtype=np.float64)
    if not len(values):
        detail = f"no scored row ({nulls} null)"
        return _judged(rule, None, detail, lambda: _lowest(report, scores))
    low, high = bootstrap_mean_ci(values)
    mean = float(values.mean())
    value = {"mean": mean, "ci95_low": low, "ci95_high": high}[rule.stat]
    detail = f"mean {mean:.4f}, 95% CI [{low:.4f}, {high:.4f}] over {len(values)} rows"
    detail += f" ({nulls} null)" if nulls else ""
    note = ci_note(values)
    detail += f"; {note}" if note else ""
    # the rows on the wrong side of the bound themselves (all rows when none is)
    against = [r for r in scores if r.score is None or not rule.holds(r.score)]
    return _judged(rule, value, detail, lambda: _lowest(report, against or scores))


def _calibrated(
    report: EvaluationReport, rule: Rule, scores: Sequence[ResultRecord]
) -> RuleOutcome:
    """A bound on the mean corrected by human labels (``reports.calibrated``); a fail
    saying so when the metric has no label (never the judge's own mean instead)."""
    metric = rule.metric or ""
    found = report.calibrated(metric)
    if found is None or found.value is None:
        detail = (
            f"no human label of {metric} on this run's rows: label some (ragmeter labels "
            "import, or the dashboard's review queue) or bound its mean"
        )
        return _judged(rule, None, detail, lambda: _lowest(report, scores))
    value = {"calibrated_mean": found.value, "calibrated_low": found.low}.get(rule.stat, found.high)
    low = "?" if found.low is None else f"{found.low:.4f}"
    high = "?" if found.high is None else f"{found.high:.4f}"
    detail = (
        f"calibrated mean {found.value:.4f}, 95% CI [{low}, {high}] from {found.n_labelled} "
        f"labelled of {found.n_rows} scored rows"
    )
    detail += "" if found.judge_mean is None else f" (judge's mean {found.judge_mean:.4f})"
    detail += f"; {found.note.text}" if found.note is not None else ""
    against = [r for r in scores if r.score is None or not rule.holds(r.score)]
    return _judged(rule, value, detail, lambda: _lowest(report, against or scores))


def _scored(report: EvaluationReport) -> list[tuple[str, str, float | None, Any]]:
    return [(r.query, r.metric_name, r.score, (r.raw_dataset or {}).get("id")) for r in report]


def _pairing(base: EvaluationReport, candidate: EvaluationReport) -> Pairing:
    """By ``id`` when every result of both has one (``runs.views.compare``'s rule), else query."""
    ids = [(r.raw_dataset or {}).get("id") for rep in (base, candidate) for r in rep]
    return "id" if ids and all(is_row_id(i) for i in ids) else "query"


def _regressed(
    base: EvaluationReport, candidate: EvaluationReport, metric: str, by: Pairing
) -> list[GateRow]:
    """The ``ROWS_PER_RULE`` pairs of ``metric`` that got worse most, the largest drop first
    (the candidate's row order on ties)."""
    a, b = base.results(metric), candidate.results(metric)
    codes: dict[Any, int] = {}

    def keys(records: list[ResultRecord]) -> np.ndarray:
        found = [(r.raw_dataset or {}).get("id") if by == "id" else r.query for r in records]
        return np.array([codes.setdefault(k, len(codes)) for k in found], dtype=np.int64)

    def scores(records: list[ResultRecord]) -> np.ndarray:
        return np.array([np.nan if r.score is None else r.score for r in records], np.float64)

    ia, ib = pair_positions(keys(a), keys(b))
    delta = scores(b)[ib] - scores(a)[ia]  # NaN where either is null
    worse = np.flatnonzero(delta < -TIE)
    rows = np.array([r.row_index for r in b], dtype=np.int64)[ib]
    order = worse[np.lexsort((rows[worse], delta[worse]))][:ROWS_PER_RULE]
    news = full_records(candidate, [b[int(ib[k])] for k in order])
    olds = full_records(base, [a[int(ia[k])] for k in order])
    return [_row(new, old) for new, old in zip(news, olds, strict=True)]


def _delta(
    rule: Rule,
    found: dict[str, MetricComparison],
    base: EvaluationReport,
    candidate: EvaluationReport,
    by: Pairing,
) -> RuleOutcome:
    item = found.get(rule.metric or "")
    if item is None:
        _metric(base, rule, "baseline")
        _metric(candidate, rule, "candidate")
        raise ConfigError(f"gate rule '{clip(rule.text, 80)}': the runs share no such metric")
    if item.delta is None or item.ci95_low is None or item.ci95_high is None:
        return _judged(rule, None, item.note or "no pair", list)
    value = item.ci95_low if rule.op in (">=", ">") else item.ci95_high
    detail = (
        f"delta {item.delta:+.4f}, 95% CI [{item.ci95_low:+.4f}, {item.ci95_high:+.4f}] over "
        f"{item.paired} pairs by {by} (baseline {item.base_mean:.4f}, candidate "
        f"{item.other_mean:.4f}); p = {item.p_value:.3g}, {item.worse} rows worse, "
        f"{item.better} better"
    )
    if item.base_unpaired or item.other_unpaired:
        detail += f"; unpaired: {item.base_unpaired} baseline, {item.other_unpaired} candidate"
    if item.ci_note:
        detail += f"; {item.ci_note}"
    return _judged(rule, value, detail, lambda: _regressed(base, candidate, item.metric_name, by))


def _dataset_rows(
    baseline: EvaluationReport | None, candidate: EvaluationReport
) -> DatasetDiff | None:
    """How the candidate's test cases differ from the baseline's, when both are runs of one
    store over different dataset versions whose cases differ (None otherwise: rows that
    differ only in the answers they carry are the comparison, not a change)."""
    from ragmeter.runs.views.dataset_diff import dataset_diff

    runs = getattr(baseline, "runs", None) or getattr(candidate, "runs", None)
    if baseline is None or runs is None or not (baseline.run_id and candidate.run_id):
        return None
    try:
        a, b = runs.get(baseline.run_id).dataset_id, runs.get(candidate.run_id).dataset_id
    except NotFoundError:  # a report of another store
        return None
    if a == b:
        return None
    diff = dataset_diff(runs, a, b)
    return diff if diff.added or diff.removed or diff.changed else None


def gate_reports(
    candidate: EvaluationReport,
    rules: Iterable[Rule | str],
    baseline: EvaluationReport | None = None,
    *,
    names: tuple[str, str | None] = ("candidate", None),
) -> GateResult:
    """Judge ``rules`` on ``candidate`` (and ``baseline`` for delta rules). ConfigError
    naming the rule when it cannot apply (an unknown metric, delta without a baseline)."""
    parsed = [r if isinstance(r, Rule) else parse_rules([r])[0] for r in rules]
    if not parsed:
        raise ConfigError(
            "no gate rule: give --rule (e.g. 'faithfulness.mean >= 0.8') or [gate] rules "
            "in ragmeter.toml"
        )
    needing = [r for r in parsed if r.needs_baseline]
    if needing and baseline is None:
        raise ConfigError(
            f"gate rule '{clip(needing[0].text, 80)}' compares with a baseline: give "
            "--baseline (a stored run or a results file)"
        )
    comparison: list[MetricComparison] = []
    by: Pairing | None = None
    if baseline is not None:
        by = _pairing(baseline, candidate)
        comparison = compare_scores(_scored(baseline), _scored(candidate), correction="none")
    found = {c.metric_name: c for c in comparison}
    outcomes = [
        _delta(rule, found, baseline, candidate, by)
        if rule.needs_baseline and baseline is not None and by is not None
        else _absolute(candidate, rule)
        for rule in parsed
    ]
    return GateResult(
        candidate=names[0],
        baseline=names[1] if baseline is not None else None,
        outcomes=tuple(outcomes),
        comparison=tuple(comparison),
        unpaired={c.metric_name: (c.base_unpaired, c.other_unpaired) for c in comparison},
        paired_by=by,
        dataset_rows=_dataset_rows(baseline, candidate),
    )


def gate(
    candidate: str | Path | EvaluationReport,
    rules: Iterable[Rule | str],
    baseline: str | Path | EvaluationReport | None = None,
    *,
    store: str | None = None,
    calibrated: bool = False,
) -> GateResult:
    """Judge ``rules`` on a candidate (a stored run's id or name, a results JSONL file or a
    report) against an optional baseline of the same kinds; ``calibrated``: bound the
    means corrected by the candidate's human labels instead of the judge's own
    (``calibrated_rules``). Rules are parsed first, so a bad rule is named before any run
    is read."""
    parsed = [r if isinstance(r, Rule) else parse_rules([r])[0] for r in rules]
    if calibrated:
        parsed = calibrated_rules(parsed)
    report, name = load_results(candidate, store=store)
    base, base_name = (None, None) if baseline is None else load_results(baseline, store=store)
    return gate_reports(report, parsed, base, names=(name, base_name))
