"""Scoring matched traces for one online rule with the offline engine: each trace's row
(``TraceRecord.row``) becomes a ``Row`` and the rule's metrics score it through
``score_rows``, as a run's rows are scored (the judge's cache, its per-model limits and
request rate, null scores with reasons). Deterministic metrics score every trace; judged
ones the sampled traces, within the rule's daily budget (``BudgetGate`` reserves each judge
request; a spent budget skips them, each skip a null score saying so)."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.config import OnlineRule, Settings
from ragmeter.datasets import Dataset, Row, row_from_mapping
from ragmeter.errors import DatasetError
from ragmeter.judge.from_config import judge_from_config
from ragmeter.metrics import LLMEvaluationMetric
from ragmeter.metrics.base import EvaluationMetric
from ragmeter.metrics.context import EmbeddingBatcher, EvaluationContext
from ragmeter.reports import ResultColumns
from ragmeter.runs.online.budget import BudgetGate, BudgetLedger, Spent, utc_day
from ragmeter.runs.online.matching import sampled
from ragmeter.runs.planning.scoring import check_judge, resolve_metrics, score_rows
from ragmeter.traces import TraceRecord, TraceScore

__all__ = ["RuleScorer", "check_rule"]

#: judged rows scored at once (each row's judge requests go out together)
JUDGE_CONCURRENCY = 16
#: judged traces scored together at most
JUDGE_CHUNK = 64


def check_rule(rule: OnlineRule, settings: Settings) -> list[EvaluationMetric[Any, Any]]:
    """The rule's metrics, once its names, judge and filters are known to be usable: a
    ``RagmeterError`` naming the first problem otherwise."""
    from ragmeter.errors import ConfigError
    from ragmeter.runs.online.matching import field_problem

    metrics = resolve_metrics(list(rule.metrics))
    if rule.judge is not None:
        settings.model(rule.judge, hint="name a [models.X] of ragmeter.toml")
    judged = [m.metric_name for m in metrics if isinstance(m, LLMEvaluationMetric)]
    if judged and rule.judge is None:
        raise ConfigError(
            f"online rule '{rule.name}': metrics {', '.join(judged)} need a judge; "
            "set judge to a [models.X] of ragmeter.toml"
        )
    for condition in rule.filters:
        problem = field_problem(condition.field)
        if problem:
            raise ConfigError(f"online rule '{rule.name}': {problem}")
    return metrics


@dataclass
class _Cost:
    """What the traces a scorer judged took: judge requests and tokens, and how many traces
    (read from the ledger around each chunk; another replica spending on the same rule at
    once makes it an overestimate, never a reason to pass the budget)."""

    traces: int = 0
    requests: int = 0
    tokens: int = 0

    def add(self, traces: int, after: Spent, before: Spent) -> None:
        self.traces += traces
        self.requests += max(after.requests - before.requests, 0)
        self.tokens += max(after.tokens - before.tokens, 0)

    def room(self, requests: int, tokens: int) -> int:
        """Whole traces ``requests`` and ``tokens`` pay for at the mean cost so far: one
        while nothing is known (the first trace measures the cost), a full chunk while the
        traces judged took no request (the judge's cache answered them)."""
        if not self.traces:
            return 1
        if not self.requests:
            return JUDGE_CHUNK
        room = requests * self.traces // self.requests
        if self.tokens:
            room = min(room, tokens * self.traces // self.tokens)
        return room

    def describe(self) -> str:
        if not self.traces or not self.requests:
            return ""
        return f"; a trace takes {self.requests / self.traces:.1f} requests"


@dataclass
class _Case:
    """A trace being scored: its row (None: unusable) and the metrics it gets."""

    trace: TraceRecord
    row: Row | None
    metrics: list[EvaluationMetric[Any, Any]]


class RuleScorer:
    """Scores traces for one rule. Made once per rule version and reused batch after batch
    (its judge engine keeps its connection and the process's per-model limits)."""

    def __init__(self, rule: OnlineRule, settings: Settings, ledger: BudgetLedger) -> None:
        self.rule = rule
        self.ledger = ledger
        self.metrics = check_rule(rule, settings)
        #: the judge's ``[models.X]`` as the scorer was made with it
        self.judge_config = settings.models.get(rule.judge) if rule.judge else None
        self.judge: Any = None
        if rule.judge is not None and self._judged():
            self.judge = judge_from_config(rule.judge, settings=settings)
            self.judge.gate = BudgetGate(ledger, rule)
        check_judge(self.judge, self.metrics)
        self._batcher = EmbeddingBatcher()
        #: judge requests and tokens the traces this scorer judged took, and how many
        self._cost = _Cost()

    def _judged(self) -> list[EvaluationMetric[Any, Any]]:
        return [m for m in self.metrics if isinstance(m, LLMEvaluationMetric)]

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()

    async def score(self, traces: Sequence[TraceRecord]) -> list[TraceScore]:
        """Every score of ``traces`` (already matched): each trace's deterministic metrics,
        and its judged ones if sampled (null with the reason when the budget is spent)."""
        now = time.time_ns()
        scores: list[TraceScore] = []
        plain: list[_Case] = []
        judged: list[_Case] = []
        for index, trace in enumerate(traces):
            case, nulls = self._case(index, trace, now)
            scores.extend(nulls)
            if case is None:
                continue
            for kept, wanted in ((plain, False), (judged, True)):
                metrics = [m for m in case.metrics if isinstance(m, LLMEvaluationMetric) is wanted]
                if metrics:
                    kept.append(_Case(case.trace, case.row, metrics))
        scores.extend(await self._score_cases(plain))
        scores.extend(await self._judge_in_chunks(judged))
        if traces:
            await asyncio.to_thread(self.ledger.add, self.rule.name, utc_day(), traces=len(traces))
        return scores

    async def _score_cases(self, cases: list[_Case]) -> list[TraceScore]:
        """Cases scored together, those with the same metrics in one group each."""
        groups: dict[tuple[str, ...], list[_Case]] = defaultdict(list)
        for case in cases:
            groups[tuple(m.metric_name for m in case.metrics)].append(case)
        done = await asyncio.gather(*(self._score_group(group) for group in groups.values()))
        return [score for found in done for score in found]

    async def _judge_in_chunks(self, cases: list[_Case]) -> list[TraceScore]:
        """Judged cases a chunk at a time, each chunk as many traces as the rest of today's
        budget pays for at what a trace took so far (one trace first, while that is not
        known), so the last requests finish traces rather than start some they cannot end;
        once the rest pays for no whole trace, the rest are skipped, each a null saying so."""
        scores: list[TraceScore] = []
        start = 0
        while start < len(cases):
            skip, room, before = await asyncio.to_thread(self._room)
            if skip is not None:
                now = time.time_ns()
                rest = cases[start:]
                scores += [
                    self._null(c.trace, m, skip, "upstream", now) for c in rest for m in c.metrics
                ]
                break
            chunk = cases[start : start + room]
            scores.extend(await self._score_cases(chunk))
            after = await asyncio.to_thread(self.ledger.spent, self.rule.name, utc_day())
            self._cost.add(len(chunk), after, before)
            start += len(chunk)
        return scores

    def _room(self) -> tuple[str | None, int, Spent]:
        """Why judged metrics are skipped now (the rest of the day's budget does not pay for
        one more trace), or how many traces to judge next; and the day's spending now. A
        scorer that judged nothing yet (a restart) estimates a trace's cost from the day's
        ledger: its requests and tokens over the sampled share of the traces it counts."""
        rule = self.rule
        spent = self.ledger.spent(rule.name, utc_day())
        if not self._cost.traces and spent.requests:  # a new scorer: the day's ledger says
            judged = max(1, round(spent.traces * rule.sample_rate))
            self._cost = _Cost(judged, spent.requests, spent.tokens)
        left = (rule.max_requests_per_day - spent.requests, rule.max_tokens_per_day - spent.tokens)
        room = self._cost.room(*left)
        if left[0] > 0 and left[1] > 0 and room >= 1:
            return None, min(room, JUDGE_CHUNK), spent
        return (
            (
                f"skipped: the daily judge budget of online rule '{rule.name}' is spent "
                f"({spent.requests} of {rule.max_requests_per_day} requests, {spent.tokens:,} "
                f"of {rule.max_tokens_per_day:,} tokens today, UTC{self._cost.describe()})"
            ),
            0,
            spent,
        )

    def _case(
        self, index: int, trace: TraceRecord, now: int
    ) -> tuple[_Case | None, list[TraceScore]]:
        """The trace's row and the metrics it gets (judged ones if it is sampled); the null
        scores of those it cannot get (its row lacks what they need)."""
        judged = sampled(self.rule.sample_rate, trace.trace_id)
        wanted = [m for m in self.metrics if judged or not isinstance(m, LLMEvaluationMetric)]
        null = self._null
        try:
            row = row_from_mapping(trace.row, index, source=f"trace {trace.trace_id}")
        except DatasetError as exc:
            return None, [null(trace, m, str(exc), "input", now) for m in wanted]
        nulls: list[TraceScore] = []
        ready: list[EvaluationMetric[Any, Any]] = []
        for metric in wanted:
            missing = metric.missing_fields(row)
            if missing:
                reason = f"metric '{metric.metric_name}' needs {missing}, which this trace lacks"
                nulls.append(null(trace, metric, reason, "input", now))
            else:
                ready.append(metric)
        return (_Case(trace, row, ready) if ready else None), nulls

    def _null(
        self,
        trace: TraceRecord,
        metric: EvaluationMetric[Any, Any],
        reason: str,
        kind: str,
        now: int,
    ) -> TraceScore:
        return TraceScore(
            trace_id=trace.trace_id,
            metric=metric.metric_name,
            score=None,
            rule=self.rule.name,
            reason=reason,
            error_kind=kind,
            judge_model=self._judge_of(metric),
            scored_ns=now,
        )

    def _judge_of(self, metric: EvaluationMetric[Any, Any]) -> str | None:
        return self.rule.judge if isinstance(metric, LLMEvaluationMetric) else None

    async def _score_group(self, cases: list[_Case]) -> list[TraceScore]:
        """Traces that get the same metrics, scored together by the offline engine."""
        metrics = cases[0].metrics
        rows = Dataset([case.row for case in cases if case.row is not None])
        ctx = EvaluationContext(
            judge=self.judge, max_concurrency=JUDGE_CONCURRENCY, batcher=self._batcher
        )
        ctx.metrics = metrics
        per_metric = await score_rows(metrics, rows, ctx)
        now = time.time_ns()
        return [
            self._score_of(case.trace, metric, results, i, now)
            for metric, results in zip(metrics, per_metric, strict=True)
            for i, case in enumerate(cases)
        ]

    def _score_of(
        self,
        trace: TraceRecord,
        metric: EvaluationMetric[Any, Any],
        results: ResultColumns,
        index: int,
        now: int,
    ) -> TraceScore:
        score = results.score(index)
        reason, kind = (None, None) if score is not None else results.reason(index)
        return TraceScore(
            trace_id=trace.trace_id,
            metric=metric.metric_name,
            score=score,
            rule=self.rule.name,
            passing=results.passing.get(index),
            reason=reason,
            error_kind=kind,
            feedback=results.feedback.get(index),
            judge_model=self._judge_of(metric),
            tokens=results.cost.get(index, 0),
            scored_ns=now,
        )
