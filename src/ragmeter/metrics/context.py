"""Shared state of one evaluation: defaults, the embedder, progress and work shared by metrics."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import numpy as np

from ragmeter.embeddings import Embedder, LocalEmbedder

__all__ = ["EvaluationContext"]

T = TypeVar("T")


class EvaluationContext:
    """Created once per evaluation and handed to every metric.

    Work that several metrics need (relevance judgements, embeddings of the same texts) is
    done once and kept here for the length of the evaluation.
    """

    def __init__(
        self,
        *,
        top_k: int | None = None,
        embedder: Embedder | None = None,
        judge: Any = None,
        max_concurrency: int = 16,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        self.top_k = top_k
        self.judge = judge
        self.max_concurrency = max_concurrency
        self._embedder = embedder
        self._on_progress = on_progress
        self._shared: dict[Hashable, Any] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._embed_lock = asyncio.Lock()

    @property
    def embedder(self) -> Embedder:
        """The evaluation's embedder; the local MiniLM unless one was given (loaded lazily)."""
        if self._embedder is None:
            self._embedder = LocalEmbedder()
        return self._embedder

    def advance(self, results: int) -> None:
        """Report that ``results`` more row x metric results are done."""
        if self._on_progress is not None and results:
            self._on_progress(results)

    def shared(self, key: Hashable, build: Callable[[], T]) -> T:
        """Compute ``build()`` once per evaluation for ``key`` and reuse it."""
        if key not in self._shared:
            self._shared[key] = build()
        value: T = self._shared[key]
        return value

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` in order; each distinct text is embedded once per evaluation,
        all new ones in a single batched call."""
        async with self._embed_lock:  # metrics running side by side share one request
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
            if missing:
                vectors = await self.embedder.embed(missing)
                self._vectors.update(zip(missing, vectors, strict=True))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])
