"""Relevance judgements: the grade of every retrieved item, for all rows at once.

The result is a rank-ordered grade matrix (rows x positions) plus every row's judged items
with their grades (its qrels). A row's relevant items are given either as a collection of
ids (each of grade 1) or as a mapping id -> integer grade (graded relevance, as TREC qrels
give it: 0 judged not relevant, a negative grade judged "in the pool, not assessed").

A retrieved item that the row does not judge gets ``NOT_JUDGED``, as do the positions past the
end of a row's list. Each judged item is credited once, at its best rank: a repeat later in the
list is ``NOT_JUDGED`` (trec_eval refuses runs that repeat a document).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter._grades import MAX_GRADE, plain_grades, whole_grade

__all__ = [
    "NOT_JUDGED",
    "Buckets",
    "Judgements",
    "Relevant",
    "judge_buckets",
    "judge_exact",
    "judge_overlap",
    "overlap_coefficient",
    "tokens",
]

#: grades are held as int16 (a row's grades are at most MAX_GRADE either side of 0)
GRADE_DTYPE = np.int16
#: the grade of a retrieved item the row does not judge (and of positions past a list's end)
NOT_JUDGED = int(np.iinfo(GRADE_DTYPE).min)

#: a row's relevant items: ids (grade 1 each) or id -> grade
Relevant = Collection[Any] | Mapping[Any, int]


@dataclass(frozen=True, slots=True)
class Judgements:
    """``grades[i, j]``: the grade of row i's j-th retrieved item (``NOT_JUDGED`` where the row
    does not judge it, or past its end); ``judged_rows``/``judged_grades``: every judged item of
    every row (its qrels), rows ascending."""

    grades: np.ndarray  # (rows, width) int16
    n_retrieved: np.ndarray  # (rows,) int64
    judged_rows: np.ndarray  # (n,) int64
    judged_grades: np.ndarray  # (n,) int32
    #: ``grades >= level`` of the uncut grades by level, made once and shared with the cut
    #: views (every metric of an evaluation asks for the same one or two levels)
    _relevant: dict[int, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    _uncut: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def rows(self) -> int:
        return int(self.grades.shape[0])

    @property
    def width(self) -> int:
        return int(self.grades.shape[1])

    def relevant(self, level: int = 1) -> np.ndarray:
        """(rows, width) bool: the item's grade is at least ``level`` (shared: read-only)."""
        full = self._relevant.get(level)
        if full is None:
            uncut = self.grades if self._uncut is None else self._uncut
            full = self._relevant[level] = uncut >= level
        mask: np.ndarray = full[:, : self.width]
        return mask

    def n_relevant(self, level: int = 1) -> np.ndarray:
        """(rows,) int64: judged items of grade >= ``level`` (R, trec_eval's num_rel)."""
        return self._count(self.judged_grades >= level)

    def n_nonrelevant(self, level: int = 1) -> np.ndarray:
        """(rows,) int64: items judged not relevant (0 <= grade < ``level``)."""
        grades = self.judged_grades
        return self._count((grades >= 0) & (grades < level))

    def _count(self, where: np.ndarray) -> np.ndarray:
        counts: np.ndarray = np.bincount(self.judged_rows[where], minlength=self.rows)
        return counts.astype(np.int64, copy=False)

    def cut(self, k: int | None) -> Judgements:
        """The first ``k`` retrieved items of every row (all of them for None)."""
        if k is None or k >= self.width:
            return self
        return Judgements(
            self.grades[:, :k],
            np.minimum(self.n_retrieved, k),
            self.judged_rows,
            self.judged_grades,
            self._relevant,
            self.grades if self._uncut is None else self._uncut,
        )

    def judged_only(self) -> Judgements:
        """Every row's list without the items it does not judge (nor those of a negative
        grade), the rest moved up: trec_eval's ``-J``."""
        keep = self.grades >= 0
        counts = keep.sum(axis=1, dtype=np.int64)
        width = int(counts.max()) if self.rows else 0
        grades = np.full((self.rows, width), NOT_JUDGED, dtype=GRADE_DTYPE)
        rows, _ = np.nonzero(keep)
        positions = np.cumsum(keep, axis=1)[keep] - 1
        grades[rows, positions] = self.grades[keep]
        return Judgements(grades, counts, self.judged_rows, self.judged_grades)


@dataclass(frozen=True, slots=True)
class Buckets:
    """Every row's judgements, held in groups of rows of like list length (``parts``: the row
    indexes of a group, ascending, and their judgements), so one long list widens only its
    own group's matrix, not every row's."""

    rows: int
    parts: tuple[tuple[np.ndarray, Judgements], ...]

    def map(self, score: Callable[[Judgements], np.ndarray]) -> np.ndarray:
        """``score`` of each group, put back in row order (one float per row)."""
        if len(self.parts) == 1:
            return score(self.parts[0][1])
        out = np.empty(self.rows, dtype=np.float64)
        for indexes, judgements in self.parts:
            out[indexes] = score(judgements)
        return out

    @property
    def whole(self) -> Judgements:
        """The judgements of a single group (one row, or rows of like length)."""
        if len(self.parts) != 1:
            raise ValueError(f"{len(self.parts)} groups of rows, not one")
        return self.parts[0][1]


#: a group's lists are at most this many times as long as its shortest (at least 16 wide)
_GROUP_SPREAD = 2
_GROUP_FLOOR = 16


def in_buckets(lengths: np.ndarray, judge: Callable[[np.ndarray | None], Judgements]) -> Buckets:
    """Rows grouped by list length (powers of two from 16 up), each group judged alone by
    ``judge(indexes)`` (``None``: every row, when one group holds them all)."""
    rows = len(lengths)
    widths = np.maximum(lengths, _GROUP_FLOOR)
    groups = np.ceil(np.log2(widths / _GROUP_FLOOR) / np.log2(_GROUP_SPREAD)).astype(np.int64)
    kinds = np.unique(groups)
    if len(kinds) <= 1:
        return Buckets(rows, ((np.arange(rows), judge(None)),))
    parts = []
    for kind in kinds.tolist():
        indexes = np.flatnonzero(groups == kind)
        parts.append((indexes, judge(indexes)))
    return Buckets(rows, tuple(parts))


def judge_buckets(
    retrieved: Sequence[Sequence[Any]], relevant: Sequence[Relevant], *, checked: bool = False
) -> Buckets:
    """``judge_exact`` of rows grouped by list length (see ``Buckets``)."""
    if len(relevant) != len(retrieved):
        raise ValueError(f"{len(retrieved)} retrieved lists but {len(relevant)} relevant sets")
    lengths = np.fromiter(map(len, retrieved), dtype=np.int64, count=len(retrieved))

    def judge(indexes: np.ndarray | None) -> Judgements:
        if indexes is None:
            return judge_exact(retrieved, relevant, checked=checked)
        picked = indexes.tolist()
        return judge_exact(
            [retrieved[i] for i in picked], [relevant[i] for i in picked], checked=checked
        )

    return in_buckets(lengths, judge)


def _grades_of(row: int, rel: Mapping[Any, Any]) -> dict[Any, int]:
    """A row's grades as whole numbers; ValueError naming the row and the id otherwise."""
    out: dict[Any, int] = {}
    for key, value in rel.items():
        grade = whole_grade(value)
        if grade is None:
            raise ValueError(
                f"row {row}: the grade of {key!r:.60} is {value!r:.40}; a grade is a whole "
                f"number from {-MAX_GRADE:,} to {MAX_GRADE:,}"
            )
        out[key] = grade
    return out


def _items(row: int, value: Any, what: str) -> Any:
    """A row's list or collection of ids; text is refused (it would be read letter by letter)."""
    if isinstance(value, str | bytes):
        raise ValueError(f"row {row}: {what} is text ({value!r:.60}); give a list of ids")
    return value


def judge_exact(
    retrieved: Sequence[Sequence[Any]], relevant: Sequence[Relevant], *, checked: bool = False
) -> Judgements:
    """Relevance by equality (ids, or texts from the same space) for all rows.

    ``relevant[i]`` is row i's relevant items (grade 1 each) or a mapping item -> grade. Each
    judged item is credited at its first (best) rank; a repeat later in the list is not.
    Equality is a set's (hash, then identity or ``==``). Per row, the judged items found in the
    list are a set intersection (C speed: a miss costs one lookup), then each hit's first rank.
    ``checked``: the grades are already whole numbers (a validated dataset's).
    """
    rows = len(retrieved)
    if len(relevant) != rows:
        raise ValueError(f"{rows} retrieved lists but {len(relevant)} relevant sets")
    lengths = np.fromiter(map(len, retrieved), dtype=np.int64, count=rows)
    hit_rows: list[int] = []
    hit_ranks: list[int] = []
    hit_grades: list[int] = []
    judged_counts: list[int] = []
    judged_grades: list[int] = []
    graded = False
    for row, (ret, rel) in enumerate(zip(retrieved, relevant, strict=True)):
        if not checked:
            ret, rel = _items(row, ret, "the retrieved list"), _items(row, rel, "its relevant ids")
        if type(rel) is dict or isinstance(rel, Mapping):
            graded = True
            grades = rel if checked or plain_grades(rel.values()) else _grades_of(row, rel)
            judged_counts.append(len(grades))
            judged_grades.extend(grades.values())
            found = grades.keys() & ret  # one lookup per retrieved item, no set built
            if found:
                hit_ranks.extend(_first_ranks(ret, found))
                hit_grades.extend(map(grades.__getitem__, found))
                hit_rows.extend([row] * len(found))
        else:
            wanted = set(rel)
            judged_counts.append(len(wanted))
            found = wanted.intersection(ret)
            if found:
                hit_ranks.extend(_first_ranks(ret, found))
                hit_rows.extend([row] * len(found))
    width = int(lengths.max()) if rows else 0
    matrix = np.full((rows, width), NOT_JUDGED, dtype=GRADE_DTYPE)
    counts = np.array(judged_counts, dtype=np.int64)
    judged_rows = np.repeat(np.arange(rows, dtype=np.int64), counts)
    if graded:
        # rows given as plain ids are all of grade 1; graded rows add theirs in row order
        plain = np.fromiter(
            (type(rel) is not dict and not isinstance(rel, Mapping) for rel in relevant),
            dtype=bool,
            count=rows,
        )
        grades_of = _interleave(counts, plain, judged_grades)
        matrix[hit_rows, hit_ranks] = _hit_grades(hit_rows, hit_grades, plain)
    else:
        grades_of = np.ones(len(judged_rows), dtype=np.int32)
        matrix[hit_rows, hit_ranks] = 1
    return Judgements(matrix, lengths, judged_rows, grades_of)


def _interleave(counts: np.ndarray, plain: np.ndarray, graded: list[int]) -> np.ndarray:
    """Every judged item's grade in row order: 1 for the rows given as plain ids, the graded
    rows' own grades (``graded``, in row order) for the others."""
    out = np.ones(int(counts.sum()), dtype=np.int32)
    owner = np.repeat(~plain, counts)
    out[owner] = np.array(graded, dtype=np.int32)
    return out


def _hit_grades(hit_rows: list[int], graded: list[int], plain: np.ndarray) -> np.ndarray:
    """The grade of every hit, in hit order: 1 in the plain rows, the graded rows' own."""
    out = np.ones(len(hit_rows), dtype=np.int32)
    if hit_rows:
        from_graded = ~plain[np.array(hit_rows, dtype=np.int64)]
        out[from_graded] = np.array(graded, dtype=np.int32)
    return out


#: hits of a row found with ``list.index`` (each scans up to its rank); past this many, one
#: pass over the row maps every item to its first rank, so a row costs its length, not more
_INDEX_HITS = 8


def _first_ranks(ret: Sequence[Any], found: set[Any]) -> Iterable[int]:
    """The first rank of each of ``found`` (all of them are in ``ret``), in ``found``'s order."""
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
    """Relevance for differently chunked texts: a retrieved chunk is relevant (grade 1) when its
    token overlap coefficient with a reference context not yet credited is at least
    ``threshold``. Each reference is credited to its best-ranked match only (so recall stays
    <= 1); the references are the row's judged items."""
    rows = len(retrieved)
    lengths = np.fromiter(map(len, retrieved), dtype=np.int64, count=rows)
    width = int(lengths.max()) if rows else 0
    matrix = np.full((rows, width), NOT_JUDGED, dtype=GRADE_DTYPE)
    counts = np.empty(rows, dtype=np.int64)
    # a chunk is matched in many rows: tokenised once per call, and nothing kept after it
    cache: dict[str, frozenset[str]] = {}

    def tokens_of(text: str) -> frozenset[str]:
        found = cache.get(text)
        if found is None:
            found = cache[text] = tokens(text)
        return found

    for i, (ret, refs) in enumerate(zip(retrieved, references, strict=True)):
        ref_tokens = [tokens_of(r) for r in dict.fromkeys(refs)]
        counts[i] = len(ref_tokens)
        credited = [False] * len(ref_tokens)
        for j, chunk in enumerate(ret):
            chunk_tokens = tokens_of(chunk)
            for r, ref in enumerate(ref_tokens):
                if not credited[r] and overlap_coefficient(chunk_tokens, ref) >= threshold:
                    credited[r] = True
                    matrix[i, j] = 1
                    break
    judged_rows = np.repeat(np.arange(rows, dtype=np.int64), counts)
    return Judgements(matrix, lengths, judged_rows, np.ones(len(judged_rows), dtype=np.int32))
