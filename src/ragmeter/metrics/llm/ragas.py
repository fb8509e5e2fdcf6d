"""The five RAGAS metrics, scored from judge tasks that a plan shares between them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from ragmeter.datasets import Dataset, Row
from ragmeter.errors import MetricError
from ragmeter.judge.plan import RowJudgement, TaskPlan
from ragmeter.judge.usage import Usage
from ragmeter.metrics.base import BaseEvaluationResult, LLMEvaluationMetric, no_query
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.reports.columns import ResultColumns
from ragmeter.reports.details import CONTEXT_CHARS, Details, details, group, item, verdict_items

__all__ = [
    "AnswerCorrectnessMetric",
    "ContextPrecisionMetric",
    "ContextRecallMetric",
    "FaithfulnessMetric",
    "PlannedMetric",
    "ResponseRelevancyMetric",
    "average_precision_of_useful",
    "statement_f1",
]


def _plan(ctx: EvaluationContext, judge: Any) -> TaskPlan:
    """The evaluation's task plan for ``judge``: shared by every planned metric asking it."""

    def build() -> TaskPlan:
        consumers: dict[str, set[str]] = {}
        for metric in ctx.metrics:
            if (getattr(metric, "judge", None) or ctx.judge) is not judge:
                continue
            for task in getattr(metric, "tasks", ()):
                consumers.setdefault(task, set()).add(metric.metric_name)
        return TaskPlan(
            judge,
            consumers,
            kind=ctx.plan,
            language=ctx.language,
            max_rows_in_flight=2 * ctx.max_concurrency,
        )

    return ctx.shared(("judge_task_plan", id(judge)), build)


def _ratio(verdicts: Sequence[dict[str, Any]]) -> float:
    return sum(bool(v["verdict"]) for v in verdicts) / len(verdicts)


def _misses(
    items: Sequence[str],
    verdicts: Sequence[dict[str, Any]],
    limit: int = 3,
    chars: int | None = None,
) -> str:
    """The first ``limit`` items judged no, each (cut to ``chars``) with the judge's reason."""
    missed = [
        f"{item[:chars]!r} ({v.get('reason') or 'no reason'})"
        for item, v in zip(items, verdicts, strict=False)
        if not v["verdict"]
    ]
    if not missed:
        return ""
    more = f" and {len(missed) - limit} more" if len(missed) > limit else ""
    return "; ".join(missed[:limit]) + more


def average_precision_of_useful(useful: Sequence[bool]) -> float:
    """sum_k(precision@k * v_k) / sum_k(v_k); 0 when nothing is useful."""
    flags = np.asarray(useful, dtype=bool)
    if not flags.any():
        return 0.0
    hits = np.cumsum(flags)
    precision_at_k = hits / np.arange(1, len(flags) + 1)
    return float((precision_at_k * flags).sum() / hits[-1])


#: what ``PlannedMetric.score`` returns: (score, feedback) or (score, feedback, details)
ScoreOutcome = tuple[float | None, str] | tuple[float | None, str, Details | None]


def _unpack(scored: ScoreOutcome) -> tuple[float | None, str, Details | None]:
    if len(scored) == 3:
        return scored[0], scored[1], scored[2]
    return scored[0], scored[1], None


def statement_f1(tp: int, fp: int, fn: int) -> float:
    """TP / (TP + 0.5 (FP + FN)); callers handle TP = FP = FN = 0."""
    return tp / (tp + 0.5 * (fp + fn))


def _context_details(
    contexts: Sequence[str], verdicts: Sequence[dict[str, Any]], target: str
) -> Details:
    """Each retrieved context (cut short) with its rank and the judge's usefulness verdict."""
    judged = (
        item(text, bool(v["verdict"]), v.get("reason"), rank, chars=CONTEXT_CHARS)
        for rank, (text, v) in enumerate(zip(contexts, verdicts, strict=False), start=1)
    )
    against = 1 if target == "reference" else 0
    return details(group("contexts", judged), values={"judged_against_reference": against})


class PlannedMetric(LLMEvaluationMetric):
    """An LLM metric whose judge work is done by the evaluation's task plan.

    ``tasks`` names the judge tasks it reads; ``needs`` the row fields it requires;
    ``embeds`` the row fields it embeds as they are (the executor starts embedding them as the
    row starts, while the judge works). Subclasses implement ``score`` from the row's judgement.
    """

    scale = (0.0, 1.0)

    tasks: ClassVar[tuple[str, ...]] = ()
    needs: ClassVar[tuple[str, ...]] = ()
    embeds: tuple[str, ...] = ()

    def missing_fields(self, row: Row) -> str | None:
        for name in self.needs:
            if name == "response|reference":
                if row.response is None and row.reference is None:
                    return "response or reference"
            elif name == "query":
                if not row.query:
                    return "query (a non-empty question)"
            elif getattr(row, name) is None:
                return name
        return None

    async def compute(
        self,
        prediction: str,
        contexts: Sequence[str] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        raise MetricError(
            f"{self.metric_name} scores whole rows through evaluate(); it has no per-call form"
        )

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        """(score, feedback) for one row, or (score, feedback, details) with the judge's
        reasoning (``ragmeter.reports.details``); a None score needs a reason as feedback."""
        raise NotImplementedError

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        mask = np.zeros(len(rows), dtype=bool)
        for name in self.needs:
            if name == "response|reference":
                mask |= rows.lacking("response") & rows.lacking("reference")
            elif name == "query":
                mask |= no_query(rows)
            else:
                mask |= rows.lacking(name)
        return mask

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        plan = _plan(ctx, self.judge_for(ctx))
        table = Dataset.of(rows)
        results = ResultColumns.empty(self.metric_name, len(table))

        async def one(index: int, row: Row) -> None:
            judged = await plan.judgement(index, row)
            failure = judged.failure(self.tasks)
            if failure is not None:
                results.fail(index, *failure)
            else:
                try:
                    scored = await self.score(row, judged, ctx)
                except Exception as exc:  # an embedding failure etc.: this row's data
                    results.raised(index, exc)
                else:  # a null from a usable judgement: the row's content decides it
                    score, feedback, reasoning = _unpack(scored)
                    results.put(
                        index,
                        score,
                        feedback=feedback or None,
                        error=None if score is not None else feedback,
                        error_kind=None if score is not None else "input",
                        details=reasoning,
                    )
            results.place(index, row.response, row.retrieved_contexts)
            usage = judged.cost.get(self.metric_name, Usage())
            results.charge(index, usage.to_dict(), usage.tokens)
            ctx.advance(1)

        await asyncio.gather(*(one(i, row) for i, row in enumerate(table)))
        return results


@register_metric("faithfulness")
class FaithfulnessMetric(PlannedMetric):
    """Faithfulness = supported response statements / response statements, each statement
    checked against the retrieved contexts."""

    tasks = ("response_statements", "faithfulness")
    needs = ("query", "response", "retrieved_contexts")

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        statements = judged.outputs["response_statements"]
        if not statements:
            reasoning = details(group("response_statements", []))
            return None, "the judge found no statements in the response to check", reasoning
        verdicts = judged.outputs["faithfulness"]
        missed = _misses(statements, verdicts)
        reasoning = details(group("response_statements", verdict_items(statements, verdicts)))
        return _ratio(verdicts), (f"not supported: {missed}" if missed else ""), reasoning


@register_metric("answer_relevancy", aliases=("response_relevancy", "ResponseRelevancy"))
class ResponseRelevancyMetric(PlannedMetric):
    """ResponseRelevancy = mean cosine(E(query), E(q_i)) over the questions the judge writes
    from the response (negative cosines count as 0); 0 when the response is noncommittal."""

    tasks = ("questions",)
    needs = ("query", "response")
    embeds = ("query",)

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        questions = [q for q in judged.outputs["questions"] if q.strip()]
        if judged.outputs["noncommittal"]:
            reasoning = details(
                group("questions", map(item, questions)), values={"noncommittal": 1}
            )
            return 0.0, "the judge found the response noncommittal", reasoning
        if not questions:
            reasoning = details(group("questions", []), values={"noncommittal": 0})
            return None, "the judge wrote no questions from the response", reasoning
        vectors = await ctx.embed([row.query, *questions])
        cosines = np.clip(vectors[1:] @ vectors[0], 0.0, 1.0)
        asked = (item(q, value=c) for q, c in zip(questions, cosines.tolist(), strict=True))
        reasoning = details(group("questions", asked), values={"noncommittal": 0})
        return float(cosines.mean()), "questions: " + " | ".join(questions), reasoning


@register_metric("context_precision", aliases=("ContextPrecision",))
class ContextPrecisionMetric(PlannedMetric):
    """ContextPrecision = sum_k(precision@k * v_k) / sum_k(v_k) over the retrieved contexts in
    rank order; v_k = context k was useful for the reference (for the response when the row
    has no reference). 0 when no context was useful or none was retrieved."""

    tasks = ("context_usefulness",)
    needs = ("query", "retrieved_contexts", "response|reference")

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        verdicts = judged.outputs["context_usefulness"]
        useful = [bool(v["verdict"]) for v in verdicts]
        target = "reference" if row.reference is not None else "response"
        reasoning = _context_details(row.retrieved_contexts or [], verdicts, target)
        if not any(useful):
            what = "no context was retrieved" if not useful else "no retrieved context was useful"
            return 0.0, f"{what} (judged against the {target})", reasoning
        weighted = average_precision_of_useful(useful)
        marks = "".join("1" if u else "0" for u in useful)
        return weighted, f"useful by rank: {marks} (judged against the {target})", reasoning


@register_metric("context_recall", aliases=("ContextRecall",))
class ContextRecallMetric(PlannedMetric):
    """ContextRecall = reference statements attributable to the retrieved contexts /
    reference statements."""

    tasks = ("reference_statements", "reference_attribution")
    needs = ("query", "reference", "retrieved_contexts")

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        statements = judged.outputs["reference_statements"]
        if not statements:
            reasoning = details(group("reference_statements", []))
            return None, "the judge found no statements in the reference", reasoning
        verdicts = judged.outputs["reference_attribution"]
        missed = _misses(statements, verdicts)
        reasoning = details(group("reference_statements", verdict_items(statements, verdicts)))
        return _ratio(verdicts), (f"not in the contexts: {missed}" if missed else ""), reasoning


@register_metric("answer_correctness", aliases=("AnswerCorrectness",))
class AnswerCorrectnessMetric(PlannedMetric):
    """AnswerCorrectness = (1 - w) * F1 + w * cosine(E(response), E(reference)) with
    w = ``similarity_weight`` (0.25); F1 = TP / (TP + 0.5 (FP + FN)) over the statements of
    the response vs those of the reference. No statement on either side: no score, with that
    reason (RAGAS gives 1; docs/peer-differences.md)."""

    tasks = (
        "response_statements",
        "reference_statements",
        "response_in_reference",
        "reference_in_response",
    )
    needs = ("query", "response", "reference")
    embeds: tuple[str, ...] = ("response", "reference")

    def __init__(self, similarity_weight: float = 0.25, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0.0 <= similarity_weight <= 1.0:
            raise ValueError(f"similarity_weight must be in [0, 1], got {similarity_weight!r}")
        self.weights = (1.0 - similarity_weight, similarity_weight)
        if similarity_weight == 0:
            self.embeds = ()

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        outputs = judged.outputs
        tp = sum(bool(v["verdict"]) for v in outputs["response_in_reference"])
        fp = len(outputs["response_in_reference"]) - tp
        fn = sum(not v["verdict"] for v in outputs["reference_in_response"])
        groups = (
            group(
                "response_statements",
                verdict_items(outputs["response_statements"], outputs["response_in_reference"]),
            ),
            group(
                "reference_statements",
                verdict_items(outputs["reference_statements"], outputs["reference_in_response"]),
            ),
        )
        if tp + fp + fn == 0:
            reason = "the judge found no statements in the response or the reference"
            return None, reason, details(*groups, values={"tp": 0, "fp": 0, "fn": 0})
        f1 = statement_f1(tp, fp, fn)
        similarity = 0.0
        if self.weights[1] > 0:
            vectors = await ctx.embed([row.response or "", row.reference or ""])
            similarity = float(np.clip(vectors[0] @ vectors[1], 0.0, 1.0))
        score = self.weights[0] * f1 + self.weights[1] * similarity
        values = {"tp": tp, "fp": fp, "fn": fn, "f1": f1, "similarity": similarity}
        feedback = f"TP={tp} FP={fp} FN={fn} F1={f1:.3f} similarity={similarity:.3f}"
        return score, feedback, details(*groups, values=values)
