"""Embeddings shared by the contexts of one run: concurrent rows embed in one batched call,
each text once, and a user's embedder that returns vectors of any length gives unit ones."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from ragmeter.metrics.context import EmbeddingBatcher, EvaluationContext


class LongVectors:
    """A user's embedder: deterministic vectors that are not of unit length."""

    name = "long-vectors"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([[len(t), 3.0, 4.0] for t in texts], dtype=np.float32)


async def test_contexts_sharing_a_batcher_embed_in_one_call_with_unit_vectors() -> None:
    embedder = LongVectors()
    batcher = EmbeddingBatcher(embedder)
    contexts = [EvaluationContext(batcher=batcher) for _ in range(5)]
    vectors = await asyncio.gather(
        *(ctx.embed([f"row {i}", "shared text"]) for i, ctx in enumerate(contexts))
    )
    assert len(embedder.calls) == 1  # five rows, one request
    assert sorted(embedder.calls[0]) == sorted([*(f"row {i}" for i in range(5)), "shared text"])
    for found in vectors:
        assert np.allclose(np.linalg.norm(found, axis=1), 1.0)
    assert contexts[0].embedding_usage is contexts[4].embedding_usage
    assert contexts[0].embedding_usage.embedding_requests == 1
    again = await contexts[2].embed(["shared text"])
    assert len(embedder.calls) == 1 and np.allclose(again[0], vectors[0][1])


async def test_contexts_without_a_batcher_keep_their_own() -> None:
    embedder = LongVectors()
    first, second = EvaluationContext(embedder=embedder), EvaluationContext(embedder=embedder)
    await first.embed(["a"])
    await second.embed(["a"])
    assert len(embedder.calls) == 2 and first.batcher is not second.batcher
