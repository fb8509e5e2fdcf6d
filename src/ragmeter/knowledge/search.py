"""Searching a space: vector (cosine), BM25 and hybrid (reciprocal rank fusion), always over
all queries at once: one embedding call, one index search."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from ragmeter.embeddings import Embedder, embedder_by_name, normalize_rows
from ragmeter.errors import ConfigError, EmbeddingError
from ragmeter.knowledge.indexes import SpaceIndexes, load_indexes
from ragmeter.knowledge.models import RETRIEVERS, Hit, RetrieverName, SpaceInfo
from ragmeter.knowledge.spaces import KnowledgeBase

__all__ = ["RETRIEVERS", "RRF_K", "RetrieverName", "SpaceSearcher", "fuse_rrf", "parse_retrievers"]

#: the constant of reciprocal rank fusion: score = sum over rankings of 1 / (RRF_K + rank)
RRF_K = 60
_HYBRID_DEPTH = 50

Ranked = list[tuple[int, float]]


def parse_retrievers(text: str | Sequence[str]) -> list[RetrieverName]:
    """``"vector,bm25"`` -> ["vector", "bm25"]; ConfigError naming an unknown one."""
    items = [p.strip() for p in text.split(",")] if isinstance(text, str) else list(text)
    names = [p for p in items if p]
    if not names:
        raise ConfigError(f"no retriever given; choose from {', '.join(RETRIEVERS)}")
    for name in names:
        if name not in RETRIEVERS:
            raise ConfigError(f"unknown retriever '{name}'; choose from {', '.join(RETRIEVERS)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"retriever given twice in '{','.join(names)}'")
    return names  # type: ignore[return-value]


def fuse_rrf(rankings: Sequence[Ranked], top_k: int, k: int = RRF_K) -> Ranked:
    """Reciprocal rank fusion: each ranking adds 1 / (k + rank) to its items (rank from 1)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (item, _score) in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    ordered = sorted(fused.items(), key=lambda pair: -pair[1])  # stable: first seen wins ties
    return ordered[:top_k]


class SpaceSearcher:
    """Searches one space with its own embedder. Query vectors are kept per text, so several
    retrievers over the same queries embed them once."""

    def __init__(
        self,
        kb: KnowledgeBase,
        space: str | int | SpaceInfo,
        *,
        embedder: Embedder | None = None,
    ) -> None:
        self.kb = kb
        self.info = space if isinstance(space, SpaceInfo) else kb.space(space)
        self._embedder = embedder
        self._query_vectors: dict[str, np.ndarray] = {}

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = embedder_by_name(self.info.embedder, settings=self.kb.settings)
        return self._embedder

    def indexes(self) -> SpaceIndexes:
        return load_indexes(
            self.kb.store,
            self.info.id,
            self.info.revision,
            self.kb.index_dir(self.info.id),
            hnsw_threshold=self.kb.settings.knowledge.hnsw_threshold,
        )

    async def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``queries`` (each distinct text embedded once per searcher)."""
        missing = [q for q in dict.fromkeys(queries) if q not in self._query_vectors]
        if missing:
            vectors = normalize_rows(await self.embedder.embed(missing))  # a user's may not be
            if self.info.dimension is not None and vectors.shape[1] != self.info.dimension:
                raise EmbeddingError(
                    f"embedder '{self.info.embedder}' gave {vectors.shape[1]}-d query vectors; "
                    f"space '{self.info.name}' holds {self.info.dimension}-d ones"
                )
            self._query_vectors.update(zip(missing, vectors, strict=True))
        dimension = self.info.dimension or 1
        if not queries:
            return np.zeros((0, dimension), np.float32)
        return np.stack([self._query_vectors[q] for q in queries])

    async def _vector(
        self, queries: Sequence[str], depth: int, threshold: float | None
    ) -> list[Ranked]:
        indexes = await asyncio.to_thread(self.indexes)
        if len(indexes.vectors) == 0:
            return [[] for _ in queries]
        vectors = await self.embed_queries(queries)
        scores, ids = await asyncio.to_thread(indexes.vectors.search, vectors, depth)
        return [
            [
                (int(c), float(s))
                for c, s in zip(row_ids, row_scores, strict=True)
                if c >= 0 and (threshold is None or s >= threshold)
            ]
            for row_ids, row_scores in zip(ids, scores, strict=True)
        ]

    async def _bm25(
        self, queries: Sequence[str], depth: int, threshold: float | None
    ) -> list[Ranked]:
        indexes = await asyncio.to_thread(self.indexes)
        results = await asyncio.to_thread(lambda: indexes.lexical.search(queries, depth))
        if threshold is None:
            return results
        return [[(c, s) for c, s in ranked if s >= threshold] for ranked in results]

    async def rank(
        self,
        queries: Sequence[str],
        *,
        top_k: int = 5,
        retriever: RetrieverName = "vector",
        score_threshold: float | None = None,
    ) -> list[Ranked]:
        """(chunk id, score) per query, best first, at most ``top_k``. ``score_threshold``
        drops hits below it: cosine for vector, BM25 score for bm25; for hybrid it filters
        the vector candidates before fusion."""
        if top_k < 1:
            raise ConfigError(f"top_k must be at least 1, got {top_k}")
        if retriever == "vector":
            return await self._vector(queries, top_k, score_threshold)
        if retriever == "bm25":
            return await self._bm25(queries, top_k, score_threshold)
        if retriever != "hybrid":
            raise ConfigError(
                f"unknown retriever '{retriever}'; choose from {', '.join(RETRIEVERS)}"
            )
        depth = max(_HYBRID_DEPTH, 4 * top_k)
        vector = await self._vector(queries, depth, score_threshold)
        lexical = await self._bm25(queries, depth, None)
        return [fuse_rrf(pair, top_k) for pair in zip(vector, lexical, strict=True)]

    async def search(
        self,
        queries: Sequence[str],
        *,
        top_k: int = 5,
        retriever: RetrieverName = "vector",
        score_threshold: float | None = None,
    ) -> list[list[Hit]]:
        """Hits with their chunk text and document name, per query."""
        ranked = await self.rank(
            queries, top_k=top_k, retriever=retriever, score_threshold=score_threshold
        )
        ids = [c for hits in ranked for c, _ in hits]
        chunks = await asyncio.to_thread(self.kb.chunks_by_id, ids)
        return [
            [
                Hit(c, s, chunks[c].content, chunks[c].document, chunks[c].meta)
                for c, s in hits
                if c in chunks
            ]
            for hits in ranked
        ]

    def vectors_of(self, chunk_ids: Sequence[int]) -> np.ndarray:
        """Stored vectors of chunks (to reuse instead of embedding their texts again)."""
        return self.indexes().vectors.vectors_of(np.asarray(chunk_ids, dtype=np.int64))
