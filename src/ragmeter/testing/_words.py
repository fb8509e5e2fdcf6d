"""Word-overlap rules every scripted answer uses: words, sentences and "supported"."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["SUPPORT", "sentences", "supported", "words"]

_WORD = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*|\n+")
_STOP_WORDS = (
    "a an the of to in on for and or is are was were be by with as at it its this that from "
    "which what how why who does do can"
)
_STOP = frozenset(_STOP_WORDS.split(" "))
#: share of a claim's words found in the sources for it to count as supported
SUPPORT = 0.6


def words(text: str) -> set[str]:
    """Lower-cased English words and single Chinese characters, stop words dropped."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def supported(claim: str, sources: Iterable[str]) -> bool:
    """Whether most of ``claim``'s words occur in ``sources``."""
    found = words(claim)
    if not found:
        return False
    pool: set[str] = set().union(*(words(s) for s in sources))
    return len(found & pool) / len(found) >= SUPPORT


def sentences(text: str | None) -> list[str]:
    """Sentences (and lines) holding at least one word."""
    return [s.strip() for s in _SENTENCE.split(text or "") if s and len(words(s)) > 0]
