"""The embedder protocol: async, batched, returning L2-normalised float32 rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Embedder", "normalize_rows"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``embed`` returns shape ``(len(texts), dim)``, rows of unit
    length (a zero vector stays zero), in the order of ``texts``; it batches internally."""

    @property
    def name(self) -> str: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length so that a dot product is a cosine similarity."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    out: np.ndarray = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return out
