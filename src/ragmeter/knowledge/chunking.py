"""Chunkers: markdown headers (DB-GPT's ``"H1-H2": text`` format), size with overlap,
paragraphs and a separator. Sizes count characters."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from ragmeter.knowledge._markdown import markdown_sections
from ragmeter.knowledge._split import iter_by_size
from ragmeter.wire.knowledge import ChunkingConfig

__all__ = ["CHUNKING_STRATEGIES", "ChunkDraft", "ChunkingConfig", "chunk_text"]

CHUNKING_STRATEGIES: tuple[str, ...] = ("markdown", "size", "paragraph", "separator")

#: a header path never takes more than this share of a chunk; the rest is text
_MAX_PREFIX_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk before it is stored: its text and where it came from."""

    content: str
    meta: dict[str, Any] = field(default_factory=dict)


def _header_prefix(path: tuple[str, ...], config: ChunkingConfig) -> str:
    """``"H1-H2": `` (DB-GPT's format), shortened to at most half a chunk."""
    prefix = '"' + "-".join(path) + '": '
    limit = int(config.chunk_size * _MAX_PREFIX_SHARE)
    if len(prefix) > limit:
        prefix = prefix[: max(limit - 4, 1)] + '…": '
    return prefix


#: characters of a header title kept in a chunk's ``headers``: each chunk of a section
#: carries them, so a long title would be stored once per chunk
MAX_HEADER_CHARS = 200


def _headers(path: tuple[str, ...]) -> list[str]:
    return [t if len(t) <= MAX_HEADER_CHARS else t[: MAX_HEADER_CHARS - 1] + "…" for t in path]


def _markdown_chunks(text: str, config: ChunkingConfig) -> Iterator[ChunkDraft]:
    for section in markdown_sections(text):
        prefix = _header_prefix(section.path, config)
        headers = _headers(section.path)
        room = max(config.chunk_size - len(prefix), int(config.chunk_size * _MAX_PREFIX_SHARE))
        overlap = min(config.chunk_overlap, room - 1)
        pieces = iter_by_size(section.text, room, overlap)
        first, second = next(pieces, None), next(pieces, None)
        if first is None:
            continue
        if second is None:  # a section in one chunk has no part number
            yield ChunkDraft(prefix + first, {"headers": headers})
            continue
        for part, piece in enumerate(chain((first, second), pieces)):
            yield ChunkDraft(prefix + piece, {"headers": list(headers), "part": part})


def _resplit(pieces: Iterable[str], config: ChunkingConfig) -> Iterator[ChunkDraft]:
    for piece in pieces:
        if piece.strip():
            for part in iter_by_size(piece, config.chunk_size, config.chunk_overlap):
                yield ChunkDraft(part)


def _drafts(text: str, config: ChunkingConfig) -> Iterator[ChunkDraft]:
    if config.strategy == "markdown":
        return _markdown_chunks(text, config)
    if config.strategy == "size":
        sized = iter_by_size(text, config.chunk_size, config.chunk_overlap)
        return (ChunkDraft(c) for c in sized)
    separator = "\n\n" if config.strategy == "paragraph" else config.separator
    return _resplit((p.strip() for p in text.split(separator)), config)


def chunk_text(
    text: str,
    config: ChunkingConfig,
    *,
    max_chunks: int | None = None,
    max_chars: int | None = None,
) -> list[ChunkDraft]:
    """Cut one document's text into chunks by the space's strategy. A section, paragraph or
    piece longer than ``chunk_size`` is cut again by size, with overlap. With ``max_chunks``
    or ``max_chars`` (all chunks' characters) it stops one chunk past the cap, so a caller
    can tell a document is over it without cutting (and holding) all of it."""
    drafts: list[ChunkDraft] = []
    total = 0
    for draft in _drafts(text.replace("\r\n", "\n"), config):
        drafts.append(draft)
        total += len(draft.content)
        if (max_chunks is not None and len(drafts) > max_chunks) or (
            max_chars is not None and total > max_chars
        ):
            break
    return drafts
