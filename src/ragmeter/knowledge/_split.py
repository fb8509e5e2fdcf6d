"""Size-bounded splitting by a ladder of separators, with overlap between neighbours."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence

__all__ = ["SIZE_SEPARATORS", "iter_by_size", "split_by_size"]

#: tried in order: paragraphs, lines, sentence ends (zh and en), clauses, words, characters
SIZE_SEPARATORS: tuple[str, ...] = (
    "\n\n",
    "\n",
    "。",
    "！",
    "？",
    ". ",
    "! ",
    "? ",
    "；",
    "; ",
    "，",
    ", ",
    " ",
    "",
)


def _pieces(text: str, separator: str) -> list[str]:
    """``text`` cut after each ``separator`` (kept on the left piece, so nothing is lost)."""
    if not separator:
        return list(text)
    parts = text.split(separator)
    out = [part + separator for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return [p for p in out if p]


def _merge(pieces: Sequence[str], size: int, overlap: int) -> Iterator[str]:
    """Join neighbouring pieces up to ``size`` characters; each chunk starts with up to
    ``overlap`` characters of whole pieces from the end of the previous one."""
    window: deque[str] = deque()
    total = 0
    for piece in pieces:
        if window and total + len(piece) > size:
            yield "".join(window)
            while window and (total > overlap or total + len(piece) > size):
                total -= len(window.popleft())
        window.append(piece)
        total += len(piece)
    if window:
        yield "".join(window)


def _split(text: str, size: int, overlap: int, separators: Sequence[str]) -> Iterator[str]:
    index = next(
        (i for i, sep in enumerate(separators) if not sep or sep in text), len(separators) - 1
    )
    separator, finer = separators[index], separators[index + 1 :]
    fitting: list[str] = []
    for piece in _pieces(text, separator):
        if len(piece) <= size:
            fitting.append(piece)
            continue
        if fitting:
            yield from _merge(fitting, size, overlap)
            fitting = []
        if finer:
            yield from _split(piece, size, overlap, finer)
        else:
            yield piece
    if fitting:
        yield from _merge(fitting, size, overlap)


def iter_by_size(
    text: str,
    size: int,
    overlap: int = 0,
    separators: Sequence[str] = SIZE_SEPARATORS,
) -> Iterator[str]:
    """``split_by_size`` one chunk at a time, so a caller can stop at a cap without cutting
    (and holding) every chunk of a huge text."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, got {size}")
    if not text.strip():
        return
    if len(text) <= size:
        yield text.strip()
        return
    for chunk in _split(text, size, min(overlap, size - 1), separators):
        if chunk := chunk.strip():
            yield chunk


def split_by_size(
    text: str,
    size: int,
    overlap: int = 0,
    separators: Sequence[str] = SIZE_SEPARATORS,
) -> list[str]:
    """Chunks of at most ``size`` characters, cut at the coarsest separator that fits, each
    overlapping the previous by up to ``overlap`` characters; blank chunks are dropped."""
    return list(iter_by_size(text, size, overlap, separators))
