"""The vector index of a space: FAISS inner product on unit vectors (so scores are cosine
similarities), exact up to ``hnsw_threshold`` vectors and HNSW above it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ragmeter.errors import StoreError
from ragmeter.knowledge._io import replace_file, save_array

if TYPE_CHECKING:
    import faiss

__all__ = ["DEFAULT_HNSW_THRESHOLD", "VectorIndex"]

DEFAULT_HNSW_THRESHOLD = 200_000
_HNSW_M = 32
_HNSW_EF_CONSTRUCTION = 80
_HNSW_EF_SEARCH = 128


def _faiss() -> ModuleType:
    """FAISS, imported when an index is first built or read (~75 ms a run without a space
    does not pay)."""
    import faiss

    return faiss


class VectorIndex:
    """Unit vectors keyed by chunk id; ``search`` takes all queries in one call."""

    def __init__(self, index: faiss.Index, ids: np.ndarray) -> None:
        self.index = index
        self.ids = np.ascontiguousarray(ids, dtype=np.int64)
        self._positions: dict[int, int] | None = None

    @classmethod
    def build(
        cls,
        vectors: np.ndarray,
        ids: np.ndarray,
        *,
        dimension: int | None = None,
        hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
    ) -> VectorIndex:
        """An index over ``vectors`` (rows of unit length, float32) with ``ids`` per row."""
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or len(matrix) != len(ids):
            raise ValueError(f"expected {len(ids)} vectors in a 2-d array, got {matrix.shape}")
        dim = int(matrix.shape[1] or dimension or 0)
        if dim < 1:
            raise ValueError("the dimension of an empty index must be given")
        lib = _faiss()
        index: faiss.Index
        if len(matrix) > hnsw_threshold:
            hnsw = lib.IndexHNSWFlat(dim, _HNSW_M, lib.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efConstruction = _HNSW_EF_CONSTRUCTION
            hnsw.hnsw.efSearch = _HNSW_EF_SEARCH
            index = hnsw
        else:
            index = lib.IndexFlatIP(dim)
        if len(matrix):
            index.add(matrix)
        return cls(index, np.asarray(ids))

    @property
    def dimension(self) -> int:
        return int(self.index.d)

    @property
    def kind(self) -> str:
        return "hnsw" if isinstance(self.index, _faiss().IndexHNSWFlat) else "flat"

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Scores and chunk ids of the ``k`` nearest vectors of each query row, best first.
        Never more columns than the index holds, so a huge ``k`` allocates nothing more; an
        HNSW index may leave a slot it could not fill as id -1 (score -inf)."""
        matrix = np.ascontiguousarray(queries, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != self.dimension:
            raise ValueError(f"queries must have shape (n, {self.dimension}), got {matrix.shape}")
        depth = max(0, min(k, len(self)))
        if len(matrix) == 0 or depth == 0:
            return np.zeros((len(matrix), 0), np.float32), np.zeros((len(matrix), 0), np.int64)
        scores, positions = self.index.search(matrix, depth)
        ids = np.where(positions >= 0, self.ids[np.maximum(positions, 0)], -1)
        return np.where(positions >= 0, scores, -np.inf), ids

    def vectors_of(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of chunk ``ids`` (rows in the same order)."""
        if self._positions is None:
            self._positions = {int(c): i for i, c in enumerate(self.ids)}
        positions = np.asarray([self._positions[int(c)] for c in ids], dtype=np.int64)
        if not len(positions):
            return np.zeros((0, self.dimension), np.float32)
        out: np.ndarray = self.index.reconstruct_batch(positions)
        return out

    def save(self, folder: Path) -> None:
        """Write ``vectors.faiss`` and ``vector_ids.npy`` into ``folder`` (atomically each)."""
        folder.mkdir(parents=True, exist_ok=True)
        lib = _faiss()
        try:
            replace_file(folder / "vectors.faiss", lambda p: lib.write_index(self.index, str(p)))
            replace_file(folder / "vector_ids.npy", lambda p: save_array(p, self.ids))
        except (OSError, RuntimeError) as exc:
            raise StoreError(f"cannot write the vector index to {folder}: {exc}") from exc

    @classmethod
    def load(cls, folder: Path) -> VectorIndex:
        lib = _faiss()
        try:
            index = lib.read_index(str(folder / "vectors.faiss"))
            with (folder / "vector_ids.npy").open("rb") as handle:
                ids = np.load(handle)
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"cannot read the vector index in {folder}: {exc}") from exc
        if int(index.ntotal) != len(ids):
            raise StoreError(f"the vector index in {folder} does not match its ids")
        if isinstance(index, lib.IndexHNSWFlat):
            index.hnsw.efSearch = _HNSW_EF_SEARCH
        return cls(index, ids)
