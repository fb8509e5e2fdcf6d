"""LLM-judged metrics: the five RAGAS metrics, DB-GPT's AnswerRelevancyMetric, a rubric, and
the metrics of agents and conversations."""

from ragmeter.metrics.llm.agent import (
    AgentGoalAccuracyMetric,
    ConversationRelevancyMetric,
    KnowledgeRetentionMetric,
    TaskCompletionMetric,
    ToolArgumentCorrectnessMetric,
    TopicAdherenceMetric,
)
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
    "AgentGoalAccuracyMetric",
    "AnswerCorrectnessMetric",
    "AnswerRelevancyMetric",
    "ContextPrecisionMetric",
    "ContextRecallMetric",
    "ConversationRelevancyMetric",
    "CriteriaMetric",
    "FaithfulnessMetric",
    "KnowledgeRetentionMetric",
    "PlannedMetric",
    "ResponseRelevancyMetric",
    "TaskCompletionMetric",
    "ToolArgumentCorrectnessMetric",
    "TopicAdherenceMetric",
]
