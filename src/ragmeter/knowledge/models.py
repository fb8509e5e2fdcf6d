"""What the knowledge API returns: spaces, documents, chunks (their wire models live in
``ragmeter.wire``, re-exported here) and search hits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ragmeter.wire.knowledge import LOCAL_ORIGIN, UPLOAD_ORIGIN, ChunkInfo, DocumentInfo, SpaceInfo

#: how a space is searched (defined here, light, for the configs that name one)
RetrieverName = Literal["vector", "bm25", "hybrid"]
RETRIEVERS: tuple[str, ...] = get_args(RetrieverName)

__all__ = [
    "LOCAL_ORIGIN",
    "RETRIEVERS",
    "UPLOAD_ORIGIN",
    "AddReport",
    "ChunkInfo",
    "DocumentInfo",
    "Hit",
    "RetrieverName",
    "SpaceInfo",
]


@dataclass(slots=True)
class Hit:
    """One retrieved chunk: ``score`` is the retriever's own (cosine, BM25 or fused RRF)."""

    chunk_id: int
    score: float
    content: str = ""
    document: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "score": self.score,
            "document": self.document,
            "content": self.content,
            "meta": self.meta,
        }


@dataclass
class AddReport:
    """What ``add`` did, file by file; a failed file never stops the others."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    #: files in the folders given whose type is not supported
    skipped: list[str] = field(default_factory=list)
    #: documents with no text (an empty file, headers only); not stored
    empty: list[str] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated)
