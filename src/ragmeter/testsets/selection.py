"""Which chunks questions are written from, with no LLM call.

- **Boilerplate** is skipped with a counted reason: ``image_only`` (images and little else),
  ``code_only`` (code blocks and little prose), ``navigation`` (mostly lists of links) and
  ``too_short`` (fewer than ``MIN_WORDS`` words of prose).
- **Order**: a weighted random order of the usable chunks (Efraimidis-Spirakis: key =
  u^(1/w), u uniform from the seed, w the chunk's prose words), so documents are drawn in
  proportion to their content and rejected candidates are replaced by the next in line.
- **Groups** for ``multi``: the anchor's nearest chunks by the space's stored vectors that
  BM25 also finds for the anchor's named terms (rare words: in at most ``NAMED_SHARE`` of the
  chunks), sharing at least one of them; up to two partners. ``abstract``: the anchor and the
  next usable chunks of its document (up to three).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragmeter.judge.tasks import Language, detect_language
from ragmeter.knowledge.models import ChunkInfo
from ragmeter.knowledge.tokenize import tokenize

__all__ = [
    "MIN_WORDS",
    "SKIP_REASONS",
    "Candidate",
    "ChunkPool",
    "body_of",
    "skip_reason",
]

#: prose words (English words or Chinese characters) a chunk needs to ask about
MIN_WORDS = 15
#: a term in at most this share of the usable chunks is a named term
NAMED_SHARE = 0.1
#: vector neighbours looked at for a multi-chunk group
_NEIGHBOURS = 8
SKIP_REASONS = ("image_only", "code_only", "navigation", "too_short")
#: the space's BM25 search of one query: (chunk id, score), best first
LexicalSearch = Callable[[str, int], list[tuple[int, float]]]

_HEADER_PREFIX = re.compile(r'^"[^"\n]{0,300}":\s*')
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>", re.IGNORECASE)
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_HTML_TAG = re.compile(r"<[^>]+>")
_PROSE_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|[\u4e00-\u9fff]")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def body_of(chunk: ChunkInfo | str) -> str:
    """A chunk's text without the ``"H1-H2": `` header path the markdown chunker puts first."""
    text = chunk if isinstance(chunk, str) else chunk.content
    return _HEADER_PREFIX.sub("", text, count=1)


def _prose_words(text: str) -> int:
    return len(_PROSE_WORD.findall(text))


def _is_link_line(line: str) -> bool:
    """A line that is (a list item of) links with little else."""
    stripped = _LIST_ITEM.sub("", line).strip()
    if not stripped:
        return False
    links = _LINK.findall(stripped)
    if not links:
        return bool(_LIST_ITEM.match(line)) and _prose_words(stripped) <= 3
    rest = _LINK.sub("", stripped)
    return _prose_words(rest) <= 3


def skip_reason(text: str) -> str | None:
    """Why a chunk is boilerplate (one of ``SKIP_REASONS``), or None when it is usable."""
    body = body_of(text)
    no_code = _FENCE.sub(" ", body)
    no_images = _IMAGE.sub(" ", no_code)
    prose = _HTML_TAG.sub(" ", _LINK.sub(r"\1", no_images))
    words = _prose_words(prose)
    if _IMAGE.search(body) and words < MIN_WORDS:
        return "image_only"
    if no_code != body and words < MIN_WORDS:
        return "code_only"
    lines = [line for line in no_images.splitlines() if line.strip()]
    if len(lines) >= 3 and sum(_is_link_line(line) for line in lines) / len(lines) >= 0.6:
        return "navigation"
    if words < MIN_WORDS:
        return "too_short"
    return None


@dataclass(frozen=True, slots=True)
class Candidate:
    """The chunks one question is to be written from (the first is the anchor)."""

    kind: str
    chunks: tuple[ChunkInfo, ...]
    language: Language

    @property
    def key(self) -> tuple[str, ...]:
        """The source chunk ids: a candidate already written is never asked again."""
        return tuple(str(c.id) for c in self.chunks)


@dataclass
class ChunkPool:
    """A space's usable chunks in the seed's weighted order, and why the others were skipped.
    ``vectors`` are the usable chunks' stored unit vectors (row i is ``chunks[i]``)."""

    chunks: list[ChunkInfo]
    vectors: np.ndarray
    skipped: Counter[str] = field(default_factory=Counter)
    seed: int = 0
    _terms: list[set[str]] = field(default_factory=list)
    _named: list[set[str]] = field(default_factory=list)
    _documents: dict[str, list[ChunkInfo]] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        all_chunks: Sequence[ChunkInfo],
        vectors_of: Callable[[list[int]], np.ndarray],
        *,
        seed: int = 0,
        language: str = "auto",
    ) -> ChunkPool:
        """``vectors_of(ids)`` gives the space's stored vectors of chunk ids. With ``language``
        en or zh only chunks in that language are used (the others counted as
        ``other_language``)."""
        skipped: Counter[str] = Counter()
        usable: list[ChunkInfo] = []
        for chunk in all_chunks:
            reason = skip_reason(chunk.content)
            if reason is None and language != "auto" and _language(chunk) != language:
                reason = "other_language"
            if reason is None:
                usable.append(chunk)
            else:
                skipped[reason] += 1
        rng = random.Random(seed)
        keys = [
            math.log(rng.random() or 1e-300) / max(_prose_words(body_of(c)), 1) for c in usable
        ]  # log(u^(1/w)): the same order, no underflow
        order = sorted(range(len(usable)), key=lambda i: -keys[i])
        chunks = [usable[i] for i in order]
        ids = [c.id for c in chunks]
        vectors = np.asarray(vectors_of(ids), dtype=np.float32) if ids else np.zeros((0, 1))
        pool = cls(chunks=chunks, vectors=vectors, skipped=skipped, seed=seed)
        pool._index_terms()
        return pool

    def _index_terms(self) -> None:
        self._terms = [set(tokenize(body_of(c))) for c in self.chunks]
        frequency: Counter[str] = Counter(t for terms in self._terms for t in terms)
        limit = max(2, int(NAMED_SHARE * len(self.chunks)))
        self._named = [
            {t for t in terms if frequency[t] <= limit and len(t) >= 2} for terms in self._terms
        ]

    def of_document(self, document: str) -> list[ChunkInfo]:
        """The usable chunks of ``document``, in its order."""
        if not self._documents:
            for chunk in sorted(self.chunks, key=lambda c: (c.document, c.position)):
                self._documents.setdefault(chunk.document, []).append(chunk)
        return self._documents.get(document, [])

    def named_terms(self, index: int) -> set[str]:
        return self._named[index]

    def singles(self) -> Iterator[Candidate]:
        for chunk in self.chunks:
            yield Candidate("single", (chunk,), _language(chunk))

    def multis(self, lexical_search: LexicalSearch | None = None) -> Iterator[Candidate]:
        """Groups of two or three chunks around each anchor, in pool order, made as they are
        asked for (one anchor's neighbours cost one pass over the vectors and one BM25
        search); an anchor with no neighbour sharing a named term gives none.
        ``lexical_search(query, k)`` is the space's BM25 search ([(chunk id, score)]);
        without it term overlap alone decides."""
        if len(self.chunks) < 2:
            return
        position = {c.id: i for i, c in enumerate(self.chunks)}
        depth = min(_NEIGHBOURS, len(self.chunks) - 1)
        for i, anchor in enumerate(self.chunks):
            named = self._named[i]
            if not named:
                continue
            scores = self.vectors @ self.vectors[i]
            scores[i] = -np.inf
            top = np.argpartition(-scores, depth - 1)[:depth]
            nearest = sorted((int(j) for j in top), key=lambda j: (-float(scores[j]), j))
            lexical: set[int] | None = None
            if lexical_search is not None:
                query = " ".join(sorted(named))
                hits = lexical_search(query, 2 * _NEIGHBOURS)
                lexical = {position[c] for c, _ in hits if c in position}
            partners = [
                j
                for j in nearest
                if (lexical is None or j in lexical)
                and self._named[j] & named
                and self.chunks[j].content != anchor.content
            ][:2]
            if partners:
                group = (anchor, *(self.chunks[j] for j in partners))
                yield Candidate("multi", group, _language(anchor))

    def abstracts(self) -> Iterator[Candidate]:
        """The anchor with the next usable chunks of its document (two or three in all)."""
        by_document: dict[str, list[ChunkInfo]] = {}
        for chunk in sorted(self.chunks, key=lambda c: (c.document, c.position)):
            by_document.setdefault(chunk.document, []).append(chunk)
        for anchor in self.chunks:
            siblings = by_document[anchor.document]
            at = siblings.index(anchor)
            group = tuple(siblings[at : at + 3])
            if len(group) < 2:
                group = tuple(siblings[max(0, at - 2) : at + 1])
            if len(group) >= 2:
                yield Candidate("abstract", group, _language(anchor))


def _language(chunk: ChunkInfo) -> Language:
    return detect_language(body_of(chunk))
