"""LLM-judged metrics: the five RAGAS metrics, DB-GPT's AnswerRelevancyMetric and a rubric."""

from ragmeter.metrics.llm.dbgpt import (
    ANSWER_RELEVANCY_TEMPLATES,
    AnswerRelevancyMetric,
    CriteriaMetric,
)
from ragmeter.metrics.llm.ragas import (
    AnswerCorrectnessMetric,
    ContextPrecisionMetric,
    ContextRecallMetric,
    FaithfulnessMetric,
    PlannedMetric,
    ResponseRelevancyMetric,
)

__all__ = [
    "ANSWER_RELEVANCY_TEMPLATES",
    "AnswerCorrectnessMetric",
    "AnswerRelevancyMetric",
    "ContextPrecisionMetric",
    "ContextRecallMetric",
    "CriteriaMetric",
    "FaithfulnessMetric",
    "PlannedMetric",
    "ResponseRelevancyMetric",
]
