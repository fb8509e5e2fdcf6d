"""What the knowledge API returns: spaces, documents, chunks and search hits."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragmeter.knowledge.chunking import ChunkingConfig

__all__ = [
    "LOCAL_ORIGIN",
    "UPLOAD_ORIGIN",
    "AddReport",
    "ChunkInfo",
    "DocumentInfo",
    "Hit",
    "SpaceInfo",
]

#: how a document's ``source`` starts when it came from an upload (``upload:NAME``)
UPLOAD_ORIGIN = "upload"
#: how the service shows a document added from a file on the server's disk
LOCAL_ORIGIN = "local"


class SpaceInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    description: str = ""
    embedder: str
    dimension: int | None = None
    chunking: ChunkingConfig
    revision: int = 0
    documents: int = 0
    chunks: int = 0
    created_at: datetime | None = None


class DocumentInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    space_id: int
    name: str
    kind: str
    size: int
    chunk_count: int
    content_hash: str
    #: where it came from: ``upload:NAME`` for an upload, the file's path for a local add
    source: str = ""
    updated_at: datetime | None = None

    def public(self) -> DocumentInfo:
        """This document as the service shows it: an upload as it is, a file added from the
        server's disk as ``local:NAME`` (its path would tell where the server keeps files)."""
        if self.source.startswith(f"{UPLOAD_ORIGIN}:"):
            return self
        return self.model_copy(update={"source": f"{LOCAL_ORIGIN}:{self.name}"})


class ChunkInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    document: str
    position: int
    content: str
    meta: dict[str, Any] = {}


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
