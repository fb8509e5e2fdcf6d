"""Knowledge spaces: how a space chunks, its documents and chunks, search hits and what an
add did."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ChunkingStrategy = Literal["markdown", "size", "paragraph", "separator"]
#: how a document's ``source`` starts when it came from an upload (``upload:NAME``)
UPLOAD_ORIGIN = "upload"
#: how the service shows a document added from a file on the server's disk
LOCAL_ORIGIN = "local"


class ChunkingConfig(BaseModel):
    """How a space cuts documents into chunks; fixed when the space is created."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: ChunkingStrategy = "markdown"
    chunk_size: int = Field(default=512, ge=16, le=100_000)
    chunk_overlap: int = Field(default=50, ge=0)
    separator: str = "\n\n"

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_size ({self.chunk_size})"
            )
        if self.strategy == "separator" and not self.separator:
            raise ValueError("the separator strategy needs a non-empty separator")
        return self

    def describe(self) -> str:
        """A short label such as ``markdown 512/50``."""
        label = f"{self.strategy} {self.chunk_size}/{self.chunk_overlap}"
        if self.strategy == "separator":
            label += f" sep={self.separator!r}"
        return label


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
    #: the user who made it (None: made before users, or by the command line)
    created_by: str | None = None


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


class HitOut(BaseModel):
    chunk_id: int
    score: float
    document: str
    content: str
    meta: dict[str, Any] = Field(default_factory=dict)


class AddOut(BaseModel):
    added: list[str]
    updated: list[str]
    unchanged: list[str]
    failed: list[tuple[str, str]]
    empty: list[str]
    chunks: int
    seconds: float
