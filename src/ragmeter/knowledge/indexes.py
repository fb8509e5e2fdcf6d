"""A space's indexes on disk beside the store, rebuilt from the chunks whenever the space's
revision moved past the one they were built at (a crash mid-way leaves them stale, never
wrong)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlalchemy import select

from ragmeter.errors import StoreError
from ragmeter.knowledge._io import replace_file
from ragmeter.knowledge.lexical_index import LexicalIndex
from ragmeter.knowledge.vector_index import DEFAULT_HNSW_THRESHOLD, VectorIndex
from ragmeter.store.db import Store
from ragmeter.store.models import ChunkRecord, SpaceRecord

__all__ = ["SpaceIndexes", "load_indexes", "rebuild_indexes"]

_META = "index.json"


@dataclass
class SpaceIndexes:
    """The vector index (always loaded) and the BM25 index (loaded on first use)."""

    folder: Path
    revision: int
    vectors: VectorIndex
    _lexical: LexicalIndex | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def lexical(self) -> LexicalIndex:
        with self._lock:
            if self._lexical is None:
                self._lexical = LexicalIndex.load(self.folder)
            return self._lexical


def _read_meta(folder: Path) -> dict[str, int] | None:
    try:
        meta = json.loads((folder / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def rebuild_indexes(
    store: Store, space_id: int, folder: Path, *, hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD
) -> SpaceIndexes:
    """Build both indexes from the space's chunks and write them, the revision file last."""
    with store.session() as session:
        space = session.get(SpaceRecord, space_id)
        if space is None:
            raise StoreError(f"space {space_id} vanished while its index was being built")
        revision, dimension = space.revision, space.dimension
        rows = session.execute(
            select(ChunkRecord.id, ChunkRecord.content, ChunkRecord.embedding)
            .where(ChunkRecord.space_id == space_id)
            .order_by(ChunkRecord.id)
        ).all()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    texts = [r[1] for r in rows]
    blobs = [r[2] or b"" for r in rows]
    if rows:
        dimension = len(blobs[0]) // 4
        if any(len(b) != dimension * 4 for b in blobs):
            raise StoreError(f"space {space_id} holds vectors of different sizes; re-add it")
        vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), dimension)
    else:
        vectors = np.zeros((0, dimension or 1), np.float32)
    vector_index = VectorIndex.build(
        vectors, ids, dimension=dimension or 1, hnsw_threshold=hnsw_threshold
    )
    lexical = LexicalIndex.build(texts, ids)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / _META).unlink(missing_ok=True)
    vector_index.save(folder)
    lexical.save(folder)
    meta = {"revision": revision, "chunks": len(ids), "vector_index": vector_index.kind}
    replace_file(folder / _META, lambda p: _write_text(p, json.dumps(meta)))
    return SpaceIndexes(folder, revision, vector_index, lexical)


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


_loaded: dict[tuple[str, int], SpaceIndexes] = {}
_loaded_lock = threading.Lock()


def load_indexes(
    store: Store,
    space_id: int,
    revision: int,
    folder: Path,
    *,
    hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
) -> SpaceIndexes:
    """The space's indexes at ``revision``: from memory, from disk, or rebuilt if stale."""
    key = (str(folder), space_id)
    with _loaded_lock:
        cached = _loaded.get(key)
        if cached is not None and cached.revision == revision:
            return cached
        meta = _read_meta(folder)
        indexes: SpaceIndexes | None = None
        if meta is not None and meta.get("revision") == revision:
            try:
                indexes = SpaceIndexes(folder, revision, VectorIndex.load(folder))
            except StoreError:
                indexes = None  # unreadable: rebuild below
        if indexes is None:
            indexes = rebuild_indexes(store, space_id, folder, hnsw_threshold=hnsw_threshold)
        _loaded[key] = indexes
        return indexes


def forget_indexes(folder: Path, space_id: int) -> None:
    """Drop a space's indexes from memory (after it was removed)."""
    with _loaded_lock:
        _loaded.pop((str(folder), space_id), None)
