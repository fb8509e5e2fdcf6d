"""Retrieval metrics and the batch API over ranked id lists."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import numpy as np

from ragmeter.errors import MetricError
from ragmeter.metrics.registry import parse_metric_spec
from ragmeter.metrics.retrieval._judge import Judgements, judge_exact, judge_overlap
from ragmeter.metrics.retrieval._kernels import KERNELS
from ragmeter.metrics.retrieval.ranking import (
    MATCH_MODES,
    NO_RELEVANT_REASON,
    RankingMetric,
    RetrieverHitRateMetric,
    RetrieverMAPMetric,
    RetrieverMRRMetric,
    RetrieverNDCGMetric,
    RetrieverPrecisionMetric,
    RetrieverRecallMetric,
    judge_rows,
)
from ragmeter.metrics.retrieval.similarity import RetrieverSimilarityMetric

__all__ = [
    "MATCH_MODES",
    "NO_RELEVANT_REASON",
    "Judgements",
    "RankingMetric",
    "RetrieverHitRateMetric",
    "RetrieverMAPMetric",
    "RetrieverMRRMetric",
    "RetrieverNDCGMetric",
    "RetrieverPrecisionMetric",
    "RetrieverRecallMetric",
    "RetrieverSimilarityMetric",
    "judge_exact",
    "judge_overlap",
    "judge_rows",
    "score_rankings",
]

_KERNEL_ALIASES = {
    "hit_rate": "hit_rate", "success": "hit_rate", "hit": "hit_rate",
    "mrr": "mrr", "rr": "mrr", "recip_rank": "mrr",
    "precision": "precision", "p": "precision",
    "recall": "recall", "r": "recall",
    "ndcg": "ndcg", "ndcg_cut": "ndcg",
    "map": "map", "ap": "map", "map_cut": "map",
}  # fmt: skip


def score_rankings(
    retrieved: Sequence[Sequence[str]],
    relevant: Sequence[Collection[str]],
    metrics: Iterable[str],
) -> dict[str, np.ndarray]:
    """Score ranked id lists against relevant id sets, all rows at once.

    ``retrieved[i]`` is row i's ranked ids, ``relevant[i]`` its relevant ids; ``metrics`` are
    specs such as ``"mrr"``, ``"ndcg@10"``, ``"P@10"``. Returns one float64 array per spec (in
    row order), NaN where a row has no relevant id.
    """
    judgements = judge_exact(retrieved, relevant)
    out: dict[str, np.ndarray] = {}
    for text in metrics:
        spec = parse_metric_spec(text)
        kernel = _KERNEL_ALIASES.get(spec.name.lower())
        if kernel is None or spec.params:
            raise MetricError(
                f"'{text}' is not a ranking metric; use one of {', '.join(sorted(KERNELS))}[@k]"
            )
        out[text] = KERNELS[kernel](judgements, spec.k)
    return out
