"""Relevance judgements: which retrieved items are relevant, for all rows at once.

The result is a rank-ordered boolean matrix (rows x positions, padded with False) plus the
number of relevant items per row. Each relevant item is credited once, at its best rank:
a repeated id or text later in the list counts as not relevant, as trec_eval (whose runs
cannot repeat a document) would have it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the compiled judge's signature: (retrieved, relevant, width) -> (mask, n_relevant as int64)
CompiledJudge = Callable[
    [Sequence[Sequence[Any]], Sequence[Collection[Any]], int], tuple[bytearray, bytearray]
]


def _load_compiled() -> CompiledJudge | None:
    """The compiled judge, or None when the install had no C compiler to build it."""
    try:
        from ragmeter.metrics.retrieval._exact import judge
    except ImportError:
        return None
    return judge


_compiled = _load_compiled()

__all__ = ["Judgements", "judge_exact", "judge_overlap", "overlap_coefficient", "tokens"]


@dataclass(frozen=True, slots=True)
class Judgements:
    """``relevant[i, j]``: the j-th retrieved item of row i is relevant (False past its end)."""

    relevant: np.ndarray  # (rows, width) bool
    n_retrieved: np.ndarray  # (rows,) int64
    n_relevant: np.ndarray  # (rows,) int64

    @property
    def rows(self) -> int:
        return int(self.relevant.shape[0])


def _pack(flat: np.ndarray, lengths: np.ndarray, n_relevant: np.ndarray) -> Judgements:
    rows = len(lengths)
    width = int(lengths.max()) if rows else 0
    if rows and int(lengths.min()) == width:
        matrix = flat.reshape(rows, width)
    else:
        matrix = np.zeros((rows, width), dtype=bool)
        matrix[np.arange(width) < lengths[:, None]] = flat
    return Judgements(matrix, lengths, n_relevant)


def judge_exact(
    retrieved: Sequence[Sequence[str]], relevant: Sequence[Collection[str]]
) -> Judgements:
    """Relevance by equality (ids, or texts from the same space) for all rows.

    Each relevant item is credited at its first (best) rank; a repeat later in the list is
    not. Equality is a set's (hash, then identity or ``==``). The compiled judge does one pass
    over each row; without it (no C compiler at install) the pure-Python path gives the same.
    """
    rows = len(retrieved)
    if len(relevant) != rows:
        raise ValueError(f"{rows} retrieved lists but {len(relevant)} relevant sets")
    lengths = np.fromiter(map(len, retrieved), dtype=np.int64, count=rows)
    if _compiled is None:
        return judge_exact_python(retrieved, relevant, lengths)
    width = int(lengths.max()) if rows else 0
    mask, counts = _compiled(retrieved, relevant, width)
    matrix = np.frombuffer(mask, dtype=bool).reshape(rows, width)
    return Judgements(matrix, lengths, np.frombuffer(counts, dtype=np.int64))


def judge_exact_python(
    retrieved: Sequence[Sequence[str]], relevant: Sequence[Collection[str]], lengths: np.ndarray
) -> Judgements:
    """``judge_exact`` in Python, C-level passes per row: the relevant set intersected with
    the retrieved list finds the hits (a miss costs one set lookup), then each hit's first rank.
    """
    rows = len(retrieved)
    counts: list[int] = []
    count = counts.append
    hit_rows: list[int] = []
    hit_ranks: list[int] = []
    for row, (ret, rel) in enumerate(zip(retrieved, relevant, strict=True)):
        wanted = set(rel)
        count(len(wanted))
        found = wanted.intersection(ret)
        if found:
            hit_ranks.extend(_first_ranks(ret, found))
            hit_rows.extend([row] * len(found))
    width = int(lengths.max()) if rows else 0
    matrix = np.zeros((rows, width), dtype=bool)
    matrix[hit_rows, hit_ranks] = True
    return Judgements(matrix, lengths, np.array(counts, dtype=np.int64))


#: hits of a row found with ``list.index`` (each scans up to its rank); past this many, one
#: pass over the row maps every item to its first rank, so a row costs its length, not more
_INDEX_HITS = 8


def _first_ranks(ret: Sequence[str], found: set[str]) -> Iterable[int]:
    """The first rank of each of ``found`` (all of them are in ``ret``)."""
    if len(found) <= _INDEX_HITS and isinstance(ret, list | tuple):
        return map(ret.index, found)
    first = dict(zip(reversed(ret), range(len(ret) - 1, -1, -1), strict=True))
    return map(first.__getitem__, found)


_TOKEN = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
)


def tokens(text: str) -> frozenset[str]:
    """Lower-cased word tokens; each Han character is a token of its own."""
    return frozenset(_TOKEN.findall(text.lower()))


def overlap_coefficient(a: frozenset[str], b: frozenset[str]) -> float:
    """|A ∩ B| / min(|A|, |B|): how much of the smaller text the larger one contains."""
    if not a or not b:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & large) / len(small)


def judge_overlap(
    retrieved: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    threshold: float = 0.8,
) -> Judgements:
    """Relevance for differently chunked texts: a retrieved chunk is relevant when its token
    overlap coefficient with a reference context not yet credited is at least ``threshold``.
    Each reference is credited to its best-ranked match only (so recall stays <= 1)."""
    rows = len(retrieved)
    lengths = np.fromiter(map(len, retrieved), dtype=np.int64, count=rows)
    n_relevant = np.empty(rows, dtype=np.int64)
    parts: list[bytes] = []
    # a chunk is matched in many rows: tokenised once per call, and nothing kept after it
    cache: dict[str, frozenset[str]] = {}

    def tokens_of(text: str) -> frozenset[str]:
        found = cache.get(text)
        if found is None:
            found = cache[text] = tokens(text)
        return found

    for i, (ret, refs) in enumerate(zip(retrieved, references, strict=True)):
        ref_tokens = [tokens_of(r) for r in dict.fromkeys(refs)]
        n_relevant[i] = len(ref_tokens)
        credited = [False] * len(ref_tokens)
        mask = bytearray(len(ret))
        for j, chunk in enumerate(ret):
            chunk_tokens = tokens_of(chunk)
            for r, ref in enumerate(ref_tokens):
                if not credited[r] and overlap_coefficient(chunk_tokens, ref) >= threshold:
                    credited[r] = True
                    mask[j] = 1
                    break
        parts.append(bytes(mask))
    flat = np.frombuffer(b"".join(parts), dtype=bool)
    return _pack(flat, lengths, n_relevant)
