"""Retrieval metrics and the batch API over ranked id lists."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from ragmeter._grades import MAX_GRADE
from ragmeter.errors import MetricError
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import create_metric
from ragmeter.metrics.retrieval import measures
from ragmeter.metrics.retrieval._judge import (
    NOT_JUDGED,
    Buckets,
    Judgements,
    Relevant,
    judge_buckets,
    judge_exact,
    judge_overlap,
)
from ragmeter.metrics.retrieval.ranking import (
    LEGACY_NO_RELEVANT_REASON,
    MATCH_MODES,
    NO_RELEVANT_MODES,
    NO_RELEVANT_REASON,
    RankingMetric,
    RetrieverHitRateMetric,
    RetrieverMAPMetric,
    RetrieverMRRMetric,
    RetrieverNDCGMetric,
    RetrieverPrecisionMetric,
    RetrieverRecallMetric,
    judge_rows,
    null_reason,
)
from ragmeter.metrics.retrieval.similarity import RetrieverSimilarityMetric

__all__ = [
    "LEGACY_NO_RELEVANT_REASON",
    "MATCH_MODES",
    "NOT_JUDGED",
    "NO_RELEVANT_MODES",
    "NO_RELEVANT_REASON",
    "Buckets",
    "Judgements",
    "RankingMetric",
    "RetrieverHitRateMetric",
    "RetrieverMAPMetric",
    "RetrieverMRRMetric",
    "RetrieverNDCGMetric",
    "RetrieverPrecisionMetric",
    "RetrieverRecallMetric",
    "RetrieverSimilarityMetric",
    "judge_buckets",
    "judge_exact",
    "judge_overlap",
    "judge_rows",
    "measures",
    "null_reason",
    "score_rankings",
]


def score_rankings(
    retrieved: Sequence[Sequence[Any]],
    relevant: Sequence[Relevant],
    metrics: Iterable[str],
    *,
    relevance_level: int = 1,
    no_relevant: Literal["null", "zero"] = "null",
) -> dict[str, np.ndarray]:
    """Score ranked id lists against judged ids, all rows at once.

    ``retrieved[i]`` is row i's ranked ids; ``relevant[i]`` its relevant ids (grade 1 each)
    or a mapping id -> grade (graded relevance, as TREC qrels); ``metrics`` are specs such as
    ``"mrr"``, ``"ndcg@10"``, ``"P@10"``, ``"P_10"``, ``"bpref"``. Returns one float64 array
    per metric (in row order), keyed by the metric's name as ``evaluate`` names its results
    (``"P@10"`` -> ``"precision@10"``: ``create_metric``'s canonical name; a metric given twice
    under two spellings is an error), NaN where a row has no relevant item, or 0 there with
    ``no_relevant="zero"`` (trec_eval's convention). ``relevance_level`` is the grade from
    which an item counts as relevant (trec_eval's -l).
    """
    level = relevance_level
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= MAX_GRADE:
        raise MetricError(
            f"relevance_level must be a whole number from 1 to {MAX_GRADE}, got {level!r}"
        )
    if no_relevant not in NO_RELEVANT_MODES:
        raise MetricError(f"no_relevant must be null or zero, got {no_relevant!r}")
    try:
        judgements = judge_buckets(retrieved, relevant)
    except ValueError as exc:
        raise MetricError(str(exc)) from None
    except TypeError as exc:  # an id that cannot be looked up (a list, a dict)
        raise MetricError(f"an id must be hashable (text or a number): {exc}") from None
    ctx = EvaluationContext(relevance_level=relevance_level, no_relevant=no_relevant)
    out: dict[str, np.ndarray] = {}
    for text in metrics:
        metric = create_metric(text)
        if not isinstance(metric, RankingMetric):
            raise MetricError(f"'{text}' is not a ranking metric; see 'ragmeter metrics'")
        if metric.metric_name in out:
            raise MetricError(f"metric given twice: {metric.metric_name}")
        out[metric.metric_name] = metric.score_judgements(judgements, ctx)
    return out
