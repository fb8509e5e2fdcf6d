"""Shared state of one evaluation: defaults, the embedder, progress and work shared by metrics.
Embeddings go through an ``EmbeddingBatcher``, which several contexts may share (the run
executor gives each row a context of its own, all embedding in batched calls)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from ragmeter.embeddings import DEFAULT_MODEL_NAME, Embedder, LocalEmbedder, normalize_rows
from ragmeter.errors import EmbeddingError
from ragmeter.judge.tasks import Language, detect_language
from ragmeter.judge.usage import Usage

if TYPE_CHECKING:
    from ragmeter.datasets import Row

__all__ = ["EmbeddingBatcher", "EvaluationContext"]

T = TypeVar("T")
_EMBED_BATCH = 256
_EMBED_WAIT_S = 0.02


class EmbeddingBatcher:
    """Embeds texts for one or more evaluation contexts of one event loop: each distinct text
    once, texts asked for by concurrent callers within a few milliseconds in one request.
    Vectors are scaled to unit length (a user's embedder may not), so a dot product is a
    cosine. ``usage`` counts the requests."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder
        self.usage = Usage()
        self._vectors: dict[str, np.ndarray] = {}
        self._pending: dict[str, asyncio.Future[np.ndarray]] = {}
        self._batch: list[str] = []
        self._flush_handle: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()  # kept referenced until done

    @property
    def embedder(self) -> Embedder:
        """The embedder; the local MiniLM unless one was given (loaded lazily)."""
        if self._embedder is None:
            self._embedder = LocalEmbedder()
        return self._embedder

    @property
    def embedder_name(self) -> str:
        """Name of the embedder (the local default when none was given)."""
        return self._embedder.name if self._embedder is not None else DEFAULT_MODEL_NAME

    def seed(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Vectors already computed by this embedder (a space's stored chunk vectors)."""
        for text, vector in zip(texts, vectors, strict=True):
            self._vectors.setdefault(text, vector)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` in order."""
        loop = asyncio.get_running_loop()
        for text in dict.fromkeys(texts):
            if text not in self._vectors and text not in self._pending:
                self._pending[text] = loop.create_future()
                self._batch.append(text)
        if len(self._batch) >= _EMBED_BATCH:
            self._flush()
        elif self._batch and self._flush_handle is None:
            self._flush_handle = loop.call_later(_EMBED_WAIT_S, self._flush)
        waiting = [self._pending[t] for t in texts if t not in self._vectors]
        if waiting:
            await asyncio.gather(*waiting)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        batch, self._batch = self._batch, []
        if batch:
            task = asyncio.ensure_future(self._embed_batch(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _embed_batch(self, batch: list[str]) -> None:
        try:
            vectors = normalize_rows(await self.embedder.embed(batch))
            if len(vectors) != len(batch):
                raise EmbeddingError(
                    f"embedder '{self.embedder_name}' gave {len(vectors)} vectors "
                    f"for {len(batch)} texts"
                )
        except Exception as exc:  # every waiter gets the error; the texts can be asked again
            for text in batch:
                future = self._pending.pop(text)
                if not future.done():
                    future.set_exception(exc)
            return
        self.usage.add(Usage(embedding_requests=1))
        for text, vector in zip(batch, vectors, strict=True):
            self._vectors[text] = vector
            future = self._pending.pop(text)
            if not future.done():
                future.set_result(vector)


class EvaluationContext:
    """Created once per evaluation (by the run executor: once per row) and handed to every
    metric.

    Work that several metrics need (relevance judgements, judge tasks, embeddings of the same
    texts) is done once and kept here for the length of the evaluation; embeddings are kept
    by the ``batcher``, which contexts of one run share.
    """

    def __init__(
        self,
        *,
        top_k: int | None = None,
        embedder: Embedder | None = None,
        judge: Any = None,
        max_concurrency: int = 16,
        on_progress: Callable[[int], None] | None = None,
        plan: Literal["fused", "separate"] = "fused",
        language: Literal["auto", "en", "zh"] = "auto",
        batcher: EmbeddingBatcher | None = None,
        relevance_level: int = 1,
        no_relevant: Literal["null", "zero"] = "null",
    ) -> None:
        self.top_k = top_k
        #: the grade from which an item is relevant, for metrics without their own ``rel``
        self.relevance_level = relevance_level
        #: what a ranking metric scores on a row without a relevant item: null, or 0
        #: (trec_eval's convention), for metrics without their own ``no_relevant``
        self.no_relevant: Literal["null", "zero"] = no_relevant
        self.judge = judge
        self.max_concurrency = max_concurrency
        self.plan = plan
        self.language = language
        self.metrics: list[Any] = []
        self.batcher = batcher if batcher is not None else EmbeddingBatcher(embedder)
        self._on_progress = on_progress
        self._shared: dict[Hashable, Any] = {}

    @property
    def embedder(self) -> Embedder:
        """The evaluation's embedder; the local MiniLM unless one was given (loaded lazily)."""
        return self.batcher.embedder

    @property
    def embedder_name(self) -> str:
        """Name of the evaluation's embedder (the local default when none was given)."""
        return self.batcher.embedder_name

    @property
    def embedding_usage(self) -> Usage:
        """Embedding requests made so far (by every context sharing the batcher)."""
        return self.batcher.usage

    def seed_vectors(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Vectors already computed by the evaluation's embedder (a space's stored chunk
        vectors), so ``embed`` does not ask for them again."""
        self.batcher.seed(texts, vectors)

    def language_of(self, row: Row) -> Language:
        """The prompt language for a row: the setting, or detected from its query and response."""
        if self.language != "auto":
            return self.language
        return detect_language(row.query, row.response)

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
        """Unit vectors for ``texts`` in order. Each distinct text is embedded once per
        evaluation; texts asked for by concurrent callers (rows, metrics) within a few
        milliseconds go out in one batched request."""
        return await self.batcher.embed(texts)
