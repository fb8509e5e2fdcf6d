"""RetrieverSimilarityMetric: how close the retrieved chunks are, in meaning, to the references."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np

from ragmeter._sync import run_sync
from ragmeter.datasets import Dataset, Row
from ragmeter.embeddings import Embedder, normalize_rows
from ragmeter.metrics.base import (
    BaseEvaluationResult,
    RetrieverEvaluationMetric,
    overrides,
)
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.reports.columns import ResultColumns

__all__ = ["RetrieverSimilarityMetric"]

NO_REFERENCE_REASON = (
    "no reference: the row's reference contexts are empty, so there is nothing to compare with"
)

Reduce = Literal["max", "first", "mean"]


@register_metric("retrieval_similarity", aliases=("similarity",))
class RetrieverSimilarityMetric(RetrieverEvaluationMetric):
    """Similarity = mean over retrieved chunks of cosine(E(chunk), E(reference)), reduced over
    references by max (default), first (DB-GPT) or mean.

    Nothing retrieved scores 0; no reference context gives a null score with a reason.
    Embeddings of all rows are computed in one batched call.
    """

    scale = (-1.0, 1.0)

    def __init__(
        self,
        embedder: Embedder | None = None,
        top_k: int | None = None,
        reduce: Reduce = "max",
    ) -> None:
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        if reduce not in ("max", "first", "mean"):
            raise ValueError(f"reduce must be max, first or mean, got {reduce!r}")
        self.embedder = embedder
        self.top_k = top_k
        self.reduce: Reduce = reduce

    def _score(self, retrieved: np.ndarray, references: np.ndarray) -> float:
        if self.reduce == "first":
            references = references[:1]
        # rows are unit vectors, so this is cosine similarity; float32 rounding can step
        # just past +-1 for identical texts, so it is clipped back
        similarity = np.clip(retrieved @ references.T, -1.0, 1.0)
        per_chunk = similarity.max(axis=1) if self.reduce == "max" else similarity.mean(axis=1)
        return float(per_chunk.mean())

    def _put(
        self,
        results: ResultColumns,
        index: int,
        retrieved: list[str],
        references: list[str],
        vectors: dict[str, np.ndarray],
    ) -> None:
        if not references:
            results.fail(index, NO_REFERENCE_REASON, "input")
        elif not retrieved:
            results.put(index, 0.0)
        else:
            results.put(
                index,
                self._score(
                    np.stack([vectors[t] for t in retrieved]),
                    np.stack([vectors[t] for t in references]),
                ),
            )
        results.place(index, retrieved, references)

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        if overrides(self, RetrieverSimilarityMetric, "sync_compute") or overrides(
            self, RetrieverSimilarityMetric, "compute"
        ):
            return await super().compute_rows(rows, ctx)
        table = Dataset.of(rows)
        k = self.effective_k(ctx)
        retrieved = [(r or [])[:k] for r in table.column("retrieved_contexts")]
        references = [list(r or []) for r in table.column("reference_contexts")]
        pairs = zip(retrieved, references, strict=True)
        texts = list(dict.fromkeys(t for ret, refs in pairs for t in [*ret, *refs]))
        if self.embedder is not None:  # a user's embedder may not return unit vectors
            matrix = normalize_rows(await self.embedder.embed(texts)) if texts else np.zeros((0, 0))
        else:
            matrix = await ctx.embed(texts)
        vectors = dict(zip(texts, matrix, strict=True))
        results = ResultColumns.empty(self.metric_name, len(table))
        for index, (ret, refs) in enumerate(zip(retrieved, references, strict=True)):
            self._put(results, index, list(ret), refs, vectors)
        ctx.advance(len(table))
        return results

    async def compute(
        self,
        prediction: list[str],
        contexts: Sequence[str] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        """Score one row (DB-GPT's call shape); ``contexts`` are the reference contexts."""
        ctx = EvaluationContext(embedder=self.embedder, top_k=self.top_k)
        retrieved = list(prediction or [])
        if self.top_k is not None:
            retrieved = retrieved[: self.top_k]
        texts = list(dict.fromkeys([*retrieved, *(contexts or [])]))
        matrix = await ctx.embed(texts)
        results = ResultColumns.empty(self.metric_name, 1)
        vectors = dict(zip(texts, matrix, strict=True))
        self._put(results, 0, retrieved, list(contexts or []), vectors)
        score = results.score(0)
        return BaseEvaluationResult(
            prediction=prediction,
            contexts=contexts,
            score=score,
            feedback=None if score is not None else results.reason(0)[0],
        )

    def sync_compute(
        self,
        prediction: list[str],
        contexts: Sequence[str] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        """Blocking form of ``compute`` (works in a notebook too, where a loop is running)."""
        return run_sync(self.compute(prediction, contexts, query))
