"""Metrics: the DB-GPT-shaped hierarchy, the registry and the built-in metrics."""

from ragmeter.metrics.base import (
    BaseEvaluationResult,
    EvaluationMetric,
    LLMEvaluationMetric,
    RetrieverEvaluationMetric,
)
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.llm import (
    AnswerCorrectnessMetric,
    AnswerRelevancyMetric,
    ContextPrecisionMetric,
    ContextRecallMetric,
    CriteriaMetric,
    FaithfulnessMetric,
    PlannedMetric,
    ResponseRelevancyMetric,
)
from ragmeter.metrics.registry import (
    MetricSpec,
    UnknownMetricError,
    create_metric,
    metric_entries,
    parse_metric_spec,
    register_metric,
    registry,
)
from ragmeter.metrics.retrieval import (
    RetrieverHitRateMetric,
    RetrieverMAPMetric,
    RetrieverMRRMetric,
    RetrieverNDCGMetric,
    RetrieverPrecisionMetric,
    RetrieverRecallMetric,
    RetrieverSimilarityMetric,
    score_rankings,
)

__all__ = [
    "AnswerCorrectnessMetric",
    "AnswerRelevancyMetric",
    "BaseEvaluationResult",
    "ContextPrecisionMetric",
    "ContextRecallMetric",
    "CriteriaMetric",
    "EvaluationContext",
    "EvaluationMetric",
    "FaithfulnessMetric",
    "LLMEvaluationMetric",
    "MetricSpec",
    "PlannedMetric",
    "ResponseRelevancyMetric",
    "RetrieverEvaluationMetric",
    "RetrieverHitRateMetric",
    "RetrieverMAPMetric",
    "RetrieverMRRMetric",
    "RetrieverNDCGMetric",
    "RetrieverPrecisionMetric",
    "RetrieverRecallMetric",
    "RetrieverSimilarityMetric",
    "UnknownMetricError",
    "create_metric",
    "metric_entries",
    "parse_metric_spec",
    "register_metric",
    "registry",
    "score_rankings",
]
