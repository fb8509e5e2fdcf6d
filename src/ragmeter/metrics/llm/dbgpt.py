"""DB-GPT's AnswerRelevancyMetric (a 0-5 score from a prompt template) and a generic rubric
metric, CriteriaMetric."""

from __future__ import annotations

import asyncio
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from ragmeter.datasets import Dataset, Row
from ragmeter.errors import JudgeError, error_kind
from ragmeter.judge.plan import as_structured
from ragmeter.judge.tasks import build_request
from ragmeter.judge.usage import Usage
from ragmeter.metrics.base import BaseEvaluationResult, LLMEvaluationMetric
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.reports.columns import ResultColumns
from ragmeter.reports.details import details, group, item

__all__ = [
    "ANSWER_RELEVANCY_TEMPLATES",
    "AnswerRelevancyMetric",
    "CriteriaMetric",
    "parse_score_0_5",
]

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

#: a 0-5 score as judges write it: ``4``, ``Score (0-5): 4``, ``**Score:** 4/5``, ``得分 4分``
_NUM = r"(-?\d+(?:\.\d+)?)"
_RANGE = re.compile(r"[(\[【]?\s*0\s*(?:-|–|~|到|至|to)\s*5\s*分?\s*[)\]】]?", re.IGNORECASE)
_DECORATION = re.compile(r"[*_`#>]+")
_LABELLED = re.compile(
    r"^[^\w]*(?:final\s+|overall\s+)?(?:score|rating|grade|评分|得分|分数|打分|总分)"
    r"[^\d\n-]{0,20}?" + _NUM,
    re.IGNORECASE,
)
_SCALED = re.compile(
    _NUM + r"\s*(?:/\s*5(?:\.0+)?(?![\d.])|out\s+of\s+(?:5|five)\b|分(?!钟))", re.I
)
_BARE = re.compile(r"^" + _NUM + r"\s*[.。!]?$")
#: DB-GPT's rule: the first line starts with the score, maybe followed by its reason
_LEADING = re.compile(r"^" + _NUM + r"(?:\s*[-–—:,，。.)]\s+|\s+|$)")
_OTHER_SCALE = re.compile(r"\s*(?:/|out\s+of)\s*(\d+)", re.IGNORECASE)


def _clean(line: str) -> str:
    text = unicodedata.normalize("NFKC", line)  # full-width digits and colons
    return _RANGE.sub(" ", _DECORATION.sub("", text)).strip()


def _match_score(line: str, patterns: Sequence[re.Pattern[str]]) -> float | str | None:
    """The score a line states by the first of ``patterns`` that matches, a reason when
    the line scores on another scale (``4/10``), or None."""
    for pattern in patterns:
        found = pattern.search(line)
        if found is None:
            continue
        other = _OTHER_SCALE.match(line, found.end(1))
        if other is not None and other.group(1) != "5":
            return f"the judge scored {found.group(1)}/{other.group(1)}, not on the 0-5 scale"
        return float(found.group(1))
    return None


def _later_score(cleaned: Sequence[str], indexes: Sequence[int]) -> tuple[float | str | None, int]:
    for pattern in (_LABELLED, _SCALED, _BARE):
        for index in indexes:
            found = _match_score(cleaned[index], (pattern,))
            if found is not None:
                return found, index
    return None, -1


def parse_score_0_5(reply: str) -> tuple[float | None, str | None]:
    """A 0-5 score and the feedback from a judge's reply; ``(None, reason)`` when it holds
    none. DB-GPT's rule first: the first line holds the score and the rest is the reason.
    Otherwise the first later line that states a score, preferring a labelled one
    (``Score: 3``), then a scaled one (``4/5``, ``3 out of 5``, ``4分``), then a bare number."""
    lines = reply.strip().splitlines()
    cleaned = [_clean(line) for line in lines]
    candidates = [i for i, text in enumerate(cleaned) if text]
    if not candidates:
        return None, "the judge's reply is empty"
    first = candidates[0]
    found, where = _match_score(cleaned[first], (_LABELLED, _SCALED, _BARE, _LEADING)), first
    if found is None:
        found, where = _later_score(cleaned, candidates[1:])
    if found is None:
        return None, f"no 0-5 score in the judge's reply: {reply.strip()[:120]!r}"
    if isinstance(found, str):
        return None, found
    if not 0 <= found <= 5:
        return None, f"the judge's score {found:g} is outside 0-5"
    feedback = "\n".join(line for i, line in enumerate(lines) if i != where).strip()
    return found, feedback or None


@register_metric("AnswerRelevancyMetric", aliases=("answer_relevancy_0_5",))
class AnswerRelevancyMetric(LLMEvaluationMetric):
    """DB-GPT's answer relevancy: the judge scores the answer 0-5 from a prompt template with
    ``{query}``, ``{context}`` and ``{answer}``; the first line of its reply is the score, the
    rest the feedback. ``passing`` = score >= ``passing_score`` (3 by default)."""

    scale = (0.0, 5.0)

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
        return parse_score_0_5(response)

    def result_details(self, result: BaseEvaluationResult) -> dict[str, Any] | None:
        """The 0-5 feedback: the judge's reason with its score."""
        return details(group("feedback", [item(result.feedback, value=result.score)]))


@register_metric("criteria")
class CriteriaMetric(LLMEvaluationMetric):
    """Any rubric, scored 0-1 with a reason: ``CriteriaMetric(criteria="cites its sources")``.
    ``passing`` = score >= ``passing_score`` (0.5 by default)."""

    scale = (0.0, 1.0)

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
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        structured = as_structured(self.judge_for(ctx))
        table = Dataset.of(rows)
        results = ResultColumns.empty(self.metric_name, len(table))
        semaphore = asyncio.Semaphore(ctx.max_concurrency)

        async def one(index: int, row: Row) -> None:
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
                    results.fail(index, reason, error_kind(exc))
                else:
                    score = float(reply.score)
                    results.put(
                        index,
                        score,
                        passing=score >= self.passing_score,
                        feedback=reply.reason or None,
                    )
            results.place(index, row.response, row.retrieved_contexts)
            results.charge(index, usage.to_dict(), usage.tokens)
            ctx.advance(1)

        await asyncio.gather(*(one(i, row) for i, row in enumerate(table)))
        return results
