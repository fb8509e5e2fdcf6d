"""DB-GPT's AnswerRelevancyMetric (a 0-5 score from a prompt template) and a generic rubric
metric, CriteriaMetric."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from ragmeter.datasets import Row
from ragmeter.errors import JudgeError, error_kind
from ragmeter.judge.plan import as_structured
from ragmeter.judge.tasks import build_request
from ragmeter.judge.usage import Usage
from ragmeter.metrics.base import LLMEvaluationMetric, MetricOutcome
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric

__all__ = ["ANSWER_RELEVANCY_TEMPLATES", "AnswerRelevancyMetric", "CriteriaMetric"]

ANSWER_RELEVANCY_TEMPLATES = {
    "en": (
        "You are grading how well an answer serves a user's question, using the reference "
        "context as ground truth.\n"
        "Score from 0 to 5:\n"
        "5 = answers the question fully and correctly, consistent with the context;\n"
        "4 = answers it correctly with small gaps;\n"
        "3 = partly answers it, or mixes in unsupported claims;\n"
        "2 = touches the topic but misses the point;\n"
        "1 = mostly irrelevant or wrong;\n"
        "0 = no answer, or contradicts the context.\n"
        "Write the score alone on the first line, then one or two sentences explaining it.\n\n"
        "Question:\n{query}\n\nContext:\n{context}\n\nAnswer:\n{answer}\n"
    ),
    "zh": (
        "请以参考内容为依据，评估答案对用户问题的回答质量。\n"
        "评分范围 0 到 5：\n"
        "5 = 完整、正确地回答了问题，且与参考内容一致；\n"
        "4 = 回答正确，但有少量遗漏；\n"
        "3 = 部分回答了问题，或夹杂无依据的内容；\n"
        "2 = 与主题相关但没有答到点上；\n"
        "1 = 基本无关或错误；\n"
        "0 = 没有回答，或与参考内容矛盾。\n"
        "第一行只写分数，之后用一两句话说明理由。\n\n"
        "问题：\n{query}\n\n参考内容：\n{context}\n\n答案：\n{answer}\n"
    ),
}

_SCORE = re.compile(r"-?\d+(?:\.\d+)?")


@register_metric("AnswerRelevancyMetric", aliases=("answer_relevancy_0_5",))
class AnswerRelevancyMetric(LLMEvaluationMetric):
    """DB-GPT's answer relevancy: the judge scores the answer 0-5 from a prompt template with
    ``{query}``, ``{context}`` and ``{answer}``; the first line of its reply is the score, the
    rest the feedback. ``passing`` = score >= ``passing_score`` (3 by default)."""

    prompt_templates = ANSWER_RELEVANCY_TEMPLATES

    def __init__(
        self,
        prompt_template: str | None = None,
        judge: Any = None,
        passing_score: float = 3.0,
    ) -> None:
        super().__init__(prompt_template=prompt_template, judge=judge)
        self.passing_score = passing_score

    def passing(self, score: float | None) -> bool | None:
        return None if score is None else score >= self.passing_score

    def _parse_evaluate_response(self, response: str) -> Any:
        lines = response.strip().splitlines()
        first = lines[0] if lines else ""
        match = _SCORE.search(first)
        if match is None:
            return None, f"the first line of the judge's reply holds no score: {first[:120]!r}"
        score = float(match.group())
        if not 0 <= score <= 5:
            return None, f"the judge's score {score:g} is outside 0-5"
        return score, "\n".join(lines[1:]).strip() or None


@register_metric("criteria")
class CriteriaMetric(LLMEvaluationMetric):
    """Any rubric, scored 0-1 with a reason: ``CriteriaMetric(criteria="cites its sources")``.
    ``passing`` = score >= ``passing_score`` (0.5 by default)."""

    def __init__(
        self,
        criteria: str = "",
        judge: Any = None,
        passing_score: float = 0.5,
        name: str | None = None,
    ) -> None:
        super().__init__(judge=judge)
        if not criteria.strip():
            raise ValueError("CriteriaMetric needs criteria='...', the rubric to judge by")
        self.criteria = criteria
        self.passing_score = passing_score
        if name:
            self.metric_name = name

    async def compute_rows(
        self, rows: Sequence[Row], ctx: EvaluationContext
    ) -> list[MetricOutcome]:
        structured = as_structured(self.judge_for(ctx))
        semaphore = asyncio.Semaphore(ctx.max_concurrency)

        async def one(row: Row) -> MetricOutcome:
            inputs = {
                "criteria": self.criteria,
                "question": row.query,
                "response": row.response,
                "contexts": list(row.retrieved_contexts or []) or None,
            }
            request = build_request(["criteria"], inputs, ctx.language_of(row))
            usage = Usage()
            async with semaphore:
                try:
                    reply = await structured.ask(
                        request.system, request.user, request.reply_model, usage
                    )
                except Exception as exc:  # the row's failure is data, with its reason
                    reason = (
                        str(exc) if isinstance(exc, JudgeError) else f"{type(exc).__name__}: {exc}"
                    )
                    outcome = MetricOutcome.failed(reason, error_kind(exc))
                else:
                    score = float(reply.score)
                    outcome = MetricOutcome(
                        score=score,
                        passing=score >= self.passing_score,
                        feedback=reply.reason or None,
                    )
            outcome.prediction, outcome.contexts = row.response, row.retrieved_contexts
            outcome.charge(usage)
            ctx.advance(1)
            return outcome

        return list(await asyncio.gather(*(one(row) for row in rows)))
