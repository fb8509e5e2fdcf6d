"""Which rows of a run people review, and who reviews each: a sampling rule over one metric's
results, then every picked row handed to ``k`` different reviewers.

Rules (``RULES``), each over the run's rows of one metric:

- ``random``: a simple random sample of all rows.
- ``stratified``: the scored rows cut into ``strata`` bins of equal width between the run's
  lowest and highest score (empty bins dropped; rows with a null score are one stratum
  more), then the same number of rows drawn at random from each bin (a bin too small gives
  what it has and the rest go to the others): rare scores (the failures of a run that
  mostly passes) are drawn as often as common ones, and each row's chance says by how much.
- ``disagreement``: a random sample of the rows whose repeated judgements disagree (scores
  further apart than a tie, or a score beside a null; repeats are read from a result's
  ``details.values.repeat_N``). A run without repeats is an error.
- ``threshold``: the scored rows nearest the metric's pass threshold (given, else the middle
  between the highest failing and the lowest passing score of the run); ties broken at
  random.
- ``failures``: a random sample of the rows that fail (``passing`` false) or have no score.

How many rows: ``floor(count * reviewers / k)`` (at most the rows the rule may pick);
row ``j`` of the picked ones (in a seeded random order) goes to reviewers
``(j * k + s) mod R`` for ``s < k``, so each row has ``k`` different reviewers, nobody gets a
row twice, and each reviewer gets ``count`` rows (one fewer for some when
``count * R`` is not a multiple of ``k``).

Inclusion probability (``Pick.probability``): the chance, under the rule, that the row is in
the sample, kept to weigh labels (Horvitz-Thompson: a mean over the run is
``sum(label / p) / N``). For ``random``, ``disagreement`` and ``failures`` it is ``n / N`` with
``n`` rows drawn from the ``N`` the rule may pick; for ``stratified`` it is ``n_h / N_h`` of the
row's stratum ``h``; so ``sum(1 / p)`` over the picked rows is ``N`` (for ``stratified``, when
every stratum gets a row: ask for at least as many rows as strata). ``threshold`` picks
without chance: 1 for each picked row, and the rows it leaves out could never be picked (an
estimate from it speaks for the rows near the threshold only). For ``disagreement`` and
``failures`` rows outside the rule's set have probability 0: their labels estimate that set,
not the whole run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragmeter.errors import ConfigError, LimitError

__all__ = [
    "MAX_COUNT",
    "MAX_K",
    "MAX_REVIEWERS",
    "MAX_STRATA",
    "RULES",
    "Assignment",
    "Candidate",
    "Pick",
    "ReviewOptions",
    "Sample",
    "draw",
    "pass_threshold",
]

RULES = ("random", "stratified", "disagreement", "threshold", "failures")
#: rows one reviewer may be given in one queue
MAX_COUNT = 1000
#: reviewers of one queue
MAX_REVIEWERS = 50
#: reviewers of one row
MAX_K = 10
#: score bins of the stratified rule
MAX_STRATA = 20
#: scores closer than this are the same (as compare's ties)
_TIE = 1e-12


@dataclass(frozen=True)
class Candidate:
    """One row of the run as the rules see it: its score and verdict on the metric, and its
    repeated scores when the run has repeats (else empty)."""

    row_index: int
    score: float | None
    passing: bool | None
    repeats: tuple[float | None, ...] = ()


@dataclass(frozen=True)
class ReviewOptions:
    """How to pick: the rule, rows per reviewer, the reviewers (user names), reviewers per
    row (``k``), the seed, the pass threshold (``threshold`` rule) and the bins
    (``stratified``)."""

    rule: str
    count: int
    reviewers: tuple[str, ...]
    k: int = 1
    seed: int = 0
    threshold: float | None = None
    strata: int = 5

    def check(self) -> None:
        """ConfigError naming the option that is wrong (LimitError past a cap, 422)."""
        if self.rule not in RULES:
            raise ConfigError(f"rule: unknown rule '{self.rule}' (one of {', '.join(RULES)})")
        _cap("count", self.count, MAX_COUNT)
        _cap("reviewers", len(self.reviewers), MAX_REVIEWERS)
        _cap("k", self.k, MAX_K)
        _cap("strata", self.strata, MAX_STRATA)
        if len(set(self.reviewers)) != len(self.reviewers):
            raise ConfigError("reviewers: a reviewer is named twice")
        if self.k > len(self.reviewers):
            raise ConfigError(
                f"k: {self.k} reviewers per row, but only {len(self.reviewers)} reviewers given"
            )
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise ConfigError("threshold: must be a finite number")


def _cap(name: str, value: int, cap: int) -> None:
    if value < 1:
        raise ConfigError(f"{name}: must be at least 1, not {value}")
    if value > cap:
        raise LimitError(f"{name}: {value} is more than {cap}", setting=_SETTINGS[name], status=422)


_SETTINGS = {
    "count": "MAX_COUNT",
    "reviewers": "MAX_REVIEWERS",
    "k": "MAX_K",
    "strata": "MAX_STRATA",
}


@dataclass(frozen=True)
class Pick:
    """A picked row: its inclusion probability and stratum (None but for ``stratified``)."""

    row_index: int
    probability: float
    stratum: int | None = None


@dataclass(frozen=True)
class Assignment:
    """A row given to a reviewer, ``order`` its place in that reviewer's list (from 0)."""

    row_index: int
    reviewer: str
    order: int


@dataclass
class Sample:
    """What a rule picked from ``eligible`` rows, and who reviews each."""

    picks: list[Pick]
    assignments: list[Assignment]
    eligible: int
    threshold: float | None = None
    notes: list[str] = field(default_factory=list)


def _disagree(scores: tuple[float | None, ...]) -> bool:
    present = [s for s in scores if s is not None]
    if not present:
        return False
    return len(present) != len(scores) or max(present) - min(present) > _TIE


def pass_threshold(candidates: Sequence[Candidate]) -> float | None:
    """The middle between the highest failing and the lowest passing score, or None when
    the run's verdicts do not tell (no passing or no failing score)."""
    failing = [c.score for c in candidates if c.score is not None and c.passing is False]
    passing = [c.score for c in candidates if c.score is not None and c.passing is True]
    if not failing or not passing:
        return None
    return (max(failing) + min(passing)) / 2


def _uniform(pool: list[Candidate], n: int, rng: np.random.Generator) -> list[Pick]:
    chosen: list[int] = [int(i) for i in rng.choice(len(pool), size=n, replace=False)] if n else []
    return [Pick(pool[int(i)].row_index, n / len(pool)) for i in chosen]


def _allocate(sizes: list[int], n: int) -> list[int]:
    """Equal counts per stratum summing to ``n`` (first strata take the remainder), none
    past a stratum's size (what it cannot take goes to those with room)."""
    counts = [0] * len(sizes)
    left = n
    while left > 0:
        room = [i for i, size in enumerate(sizes) if counts[i] < size]
        share, extra = divmod(left, len(room))
        for place, i in enumerate(room):
            add = min(share + (1 if place < extra else 0), sizes[i] - counts[i])
            counts[i] += add
            left -= add
    return counts


def _bins(scored: list[Candidate], strata: int) -> list[list[Candidate]]:
    """The scored rows in ``strata`` bins of equal width between the run's lowest and
    highest score (the top bin closed), empty bins dropped: a score range few rows reach
    gets as many picks as a crowded one."""
    values = np.array([c.score for c in scored], dtype=np.float64)
    if not len(values):
        return []
    low, high = float(values.min()), float(values.max())
    if high <= low:
        return [scored]
    place = np.minimum(((values - low) / (high - low) * strata).astype(np.int64), strata - 1)
    groups: list[list[Candidate]] = [[] for _ in range(strata)]
    for candidate, at in zip(scored, place, strict=True):
        groups[int(at)].append(candidate)
    return [g for g in groups if g]


def _stratified(pool: list[Candidate], n: int, strata: int, rng: np.random.Generator) -> list[Pick]:
    scored = sorted((c for c in pool if c.score is not None), key=lambda c: c.score or 0.0)
    groups = _bins(scored, strata)
    nulls = [c for c in pool if c.score is None]
    if nulls:
        groups.append(nulls)
    counts = _allocate([len(g) for g in groups], n)
    picks = []
    for stratum, (group, count) in enumerate(zip(groups, counts, strict=True)):
        picks += [Pick(p.row_index, p.probability, stratum) for p in _uniform(group, count, rng)]
    return picks


def _nearest(
    pool: list[Candidate], n: int, threshold: float, rng: np.random.Generator
) -> list[Pick]:
    shuffled = [pool[int(i)] for i in rng.permutation(len(pool))]
    ranked = sorted(shuffled, key=lambda c: abs((c.score or 0.0) - threshold))
    return [Pick(c.row_index, 1.0) for c in ranked[:n]]


def _pool(candidates: Sequence[Candidate], options: ReviewOptions) -> list[Candidate]:
    rule = options.rule
    if rule == "failures":
        return [c for c in candidates if c.score is None or c.passing is False]
    if rule == "disagreement":
        if not any(len(c.repeats) > 1 for c in candidates):
            raise ConfigError(
                "rule disagreement: this run has no repeats (its results hold one judgement "
                "per row: judge it again with ragmeter eval --repeats 3); choose another rule"
            )
        return [c for c in candidates if len(c.repeats) > 1 and _disagree(c.repeats)]
    if rule == "threshold":
        return [c for c in candidates if c.score is not None]
    return list(candidates)


def _assign(picks: list[Pick], reviewers: Sequence[str], k: int) -> list[Assignment]:
    given: dict[str, int] = {}
    out = []
    for j, pick in enumerate(picks):
        for s in range(k):
            reviewer = reviewers[(j * k + s) % len(reviewers)]
            order = given.get(reviewer, 0)
            given[reviewer] = order + 1
            out.append(Assignment(pick.row_index, reviewer, order))
    return out


def draw(candidates: Sequence[Candidate], options: ReviewOptions) -> Sample:
    """Pick rows of ``candidates`` by ``options`` (checked first) and give each to ``k``
    reviewers; the same options and rows give the same sample (seeded)."""
    options.check()
    rng = np.random.default_rng(options.seed)
    pool = _pool(candidates, options)
    if not pool:
        raise ConfigError(f"rule {options.rule}: no row of the run fits the rule")
    wanted = options.count * len(options.reviewers) // options.k
    n = min(wanted, len(pool))
    notes = [] if n == wanted else [f"{len(pool)} rows fit the rule: fewer than {wanted}"]
    threshold = None
    if options.rule == "stratified":
        picks = _stratified(pool, n, options.strata, rng)
    elif options.rule == "threshold":
        threshold = options.threshold
        if threshold is None:
            threshold = pass_threshold(candidates)
        if threshold is None:
            raise ConfigError(
                "threshold: the run's results do not tell the metric's pass threshold (no "
                "passing and failing scores); give it"
            )
        picks = _nearest(pool, n, threshold, rng)
    else:
        picks = _uniform(pool, n, rng)
    picks = [picks[int(i)] for i in rng.permutation(len(picks))]
    assignments = _assign(picks, options.reviewers, options.k)
    return Sample(picks, assignments, len(pool), threshold, notes)
