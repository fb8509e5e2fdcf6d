"""The bundled demo: a composting handbook's QA set with two precomputed retrieval runs
(``baseline`` and ``reranked``), so ragmeter can be tried offline with no key."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["DEMO_METRICS", "DEMO_RUNS", "demo_dataset_path"]

#: the retrieval runs shipped, in the order they are compared
DEMO_RUNS: tuple[str, ...] = ("baseline", "reranked")

DEMO_METRICS: tuple[str, ...] = (
    "RetrieverHitRateMetric",
    "RetrieverMRRMetric",
    "RetrieverSimilarityMetric",
    "hit_rate@1",
    "precision@3",
    "recall@3",
    "ndcg@5",
    "map@5",
)


def demo_dataset_path(run: str = "baseline") -> Path:
    """Path of a bundled demo dataset (JSONL)."""
    if run not in DEMO_RUNS:
        raise ValueError(f"unknown demo run {run!r}; choose from {', '.join(DEMO_RUNS)}")
    return Path(str(files("ragmeter.demo") / "data" / f"compost_{run}.jsonl"))
