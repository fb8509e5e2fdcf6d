"""Chunkers: markdown headers (DB-GPT's ``"H1-H2": text`` format), size with overlap,
paragraphs and a separator. Sizes count characters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragmeter.knowledge._markdown import markdown_sections
from ragmeter.knowledge._split import split_by_size

__all__ = ["CHUNKING_STRATEGIES", "ChunkDraft", "ChunkingConfig", "chunk_text"]

ChunkingStrategy = Literal["markdown", "size", "paragraph", "separator"]
CHUNKING_STRATEGIES: tuple[str, ...] = ("markdown", "size", "paragraph", "separator")

#: a header path never takes more than this share of a chunk; the rest is text
_MAX_PREFIX_SHARE = 0.5


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


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk before it is stored: its text and where it came from."""

    content: str
    meta: dict[str, Any] = field(default_factory=dict)


def _markdown_chunks(text: str, config: ChunkingConfig) -> list[ChunkDraft]:
    drafts: list[ChunkDraft] = []
    for section in markdown_sections(text):
        prefix = '"' + "-".join(section.path) + '": '
        room = max(config.chunk_size - len(prefix), int(config.chunk_size * _MAX_PREFIX_SHARE))
        overlap = min(config.chunk_overlap, room - 1)
        pieces = split_by_size(section.text, room, overlap)
        for part, piece in enumerate(pieces):
            meta: dict[str, Any] = {"headers": list(section.path)}
            if len(pieces) > 1:
                meta["part"] = part
            drafts.append(ChunkDraft(prefix + piece, meta))
    return drafts


def _resplit(pieces: list[str], config: ChunkingConfig) -> list[ChunkDraft]:
    drafts: list[ChunkDraft] = []
    for piece in pieces:
        if not piece.strip():
            continue
        for part in split_by_size(piece, config.chunk_size, config.chunk_overlap):
            drafts.append(ChunkDraft(part))
    return drafts


def chunk_text(text: str, config: ChunkingConfig) -> list[ChunkDraft]:
    """Cut one document's text into chunks by the space's strategy. A section, paragraph or
    piece longer than ``chunk_size`` is cut again by size, with overlap."""
    text = text.replace("\r\n", "\n")
    if config.strategy == "markdown":
        return _markdown_chunks(text, config)
    if config.strategy == "size":
        return [ChunkDraft(c) for c in split_by_size(text, config.chunk_size, config.chunk_overlap)]
    if config.strategy == "paragraph":
        paragraphs = [p.strip() for p in text.split("\n\n")]
        return _resplit(paragraphs, config)
    return _resplit([p.strip() for p in text.split(config.separator)], config)
