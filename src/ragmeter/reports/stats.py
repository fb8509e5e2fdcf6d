"""The statistics of runs and their comparison, in one place: the confidence interval of a
mean (BCa bootstrap, its analytic form for many values, percentile where BCa is undefined),
a paired sign-flip randomisation test, the family-wise correction across metrics and a
verdict. Every random draw is seeded: the same runs, the same numbers.

The correction (Bonferroni, for the p-values and the intervals alike). A comparison tests m
metrics at once, so both what it shows are made at the family's level: each p-value is
multiplied by m (capped at 1) and each interval is made at confidence 1 - alpha/m, so all m
intervals hold together with probability at least 1 - alpha (simultaneous intervals). Holm's
step-down rejects more often than Bonferroni, but it has no simultaneous intervals to show
beside its p-values: a metric Holm calls different at the second step may have a Bonferroni
interval that covers 0, and the page would contradict itself. Bonferroni's p-value and its
interval are the same bound seen two ways, so they agree up to the small gap between the
sign-flip test and the bootstrap (both approximate the same sampling law).

The verdict: "better" or "worse" only when the adjusted p is at most alpha AND the
family-wise interval lies on one side of 0 (never a claim that either contradicts; in the
rare case they disagree the verdict is "no_evidence" and the note says so), "equivalent" only
when an equivalence margin was given and the interval lies inside +-margin (the interval
form of two one-sided tests, at the family's level), else "no_evidence" (no evidence of a
difference: absence of evidence, not evidence of sameness).

An interval of fewer than ``SMALL_SAMPLE`` values, or of values all equal, is computed but
flagged (``ci_note``): it is not informative (one row gives 0.3333 (0.333-0.333)).

Cost: Monte-Carlo routes take ``resamples x n`` draws. For a mean of many values the
resampling distributions are sums of many independent terms and their analytic forms are
more accurate than the Monte-Carlo estimates they replace (see ``ANALYTIC_FROM``)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np

__all__ = [
    "ANALYTIC_FROM",
    "SMALL_SAMPLE",
    "CiMethod",
    "Correction",
    "Interval",
    "Note",
    "PMethod",
    "PairedComparison",
    "Verdict",
    "adjusted",
    "bootstrap_mean_ci",
    "ci_note",
    "compare_paired",
    "mean_ci",
    "mean_summary",
    "sign_flip_test",
    "unit_counts",
    "verdict",
]

CiMethod = Literal["bca", "percentile", "abc"]
PMethod = Literal["exact", "randomisation", "normal"]
#: no_evidence: no evidence of a difference; equivalent: inside the margin asked for
Verdict = Literal["better", "worse", "no_evidence", "equivalent"]
#: bonferroni: p-values and intervals at the family's level; none: each metric alone
Correction = Literal["bonferroni", "none"]
#: fewer values than this and a mean's interval is flagged as not informative
SMALL_SAMPLE = 30

#: draws held in memory at once (8 bytes each): bounds a chunk to ~32 MB
_MAX_DRAWS_PER_CHUNK = 4_000_000
#: fewer pairs than this and BCa's bias and acceleration are too noisy to use
BCA_MIN_PAIRS = 10
#: from this many pairs (non-zero differences, for the test) on, the analytic routes: the
#: ABC interval (DiCiccio & Efron 1992, BCa's analytic form, which for a mean needs only
#: the sample's variance and skewness) and the normal law of the sign-flip statistic (exact
#: mean 0 and variance sum(d^2), symmetric, so no skewness term). From here on they are
#: closer to the exact answers than ``RESAMPLES`` Monte-Carlo draws (BCa's tail endpoints
#: move by ~3% of the width between seeds; the normal p is within ~0.001 of the exact one,
#: 0/1 scores included, under the 0.0034 standard error of a Monte-Carlo p of 0.05), and
#: they cost O(n) instead of O(resamples x n): tests/unit/test_stats.py checks both here.
ANALYTIC_FROM = 1_000
#: Monte-Carlo draws below ``ANALYTIC_FROM``: at most 4 million per metric (~25 ms)
RESAMPLES = 4_000
#: up to this many non-zero differences the sign-flip test enumerates all 2^m patterns
_EXACT_UP_TO = 12
_NORMAL = NormalDist()


@dataclass(frozen=True)
class Note:
    """A remark on a figure: its English ``text``, and a ``code`` with the ``values`` in it,
    from which the dashboard and the HTML report say it in their reader's language."""

    code: str
    text: str
    values: Mapping[str, float | int | str] = field(default_factory=dict)


def _bca_note(code: str, why: str, **values: float | int | str) -> Note:
    return Note(code, f"BCa {why}", values)


@dataclass(frozen=True)
class Interval:
    """A confidence interval and how it was made; ``note`` says why BCa was not used."""

    low: float
    high: float
    method: CiMethod
    note: Note | None = None


@dataclass(frozen=True)
class PairedComparison:
    """One metric's paired differences (other - base): mean, the CI at ``ci_level`` (the
    family's level under a correction), raw and adjusted p of the sign-flip test, the
    verdict, why the interval is not informative (``ci_note``) and why the verdict is
    cautious (``verdict_note``: the test and the interval disagree)."""

    pairs: int
    delta: float
    ci: Interval
    ci_level: float
    p_value: float
    p_method: PMethod
    p_adjusted: float
    verdict: Verdict
    ci_note: str | None = None
    verdict_note: Note | None = None


def _sum_of_squares(values: np.ndarray) -> float:
    # einsum, not np.dot: BLAS threads spin on a busy machine and cost 10x more at 100,000
    return float(np.einsum("i,i->", values, values))


def _resampled_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Means of ``resamples`` bootstrap samples of ``values``, drawn in chunks of at most
    ``_MAX_DRAWS_PER_CHUNK`` so memory stays bounded at any n."""
    n = len(values)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=np.float64)
    # narrow indices draw and gather several times faster than int64 ones
    kind = np.uint16 if n <= 1 << 16 else np.int32
    per_chunk = max(1, _MAX_DRAWS_PER_CHUNK // n)
    for start in range(0, resamples, per_chunk):
        count = min(per_chunk, resamples - start)
        picks = rng.integers(0, n, size=(count, n), dtype=kind)
        means[start : start + count] = values[picks].mean(axis=1)
    return means


def unit_counts(
    n: int, resamples: int, seed: int, *, max_draws: int = _MAX_DRAWS_PER_CHUNK
) -> Iterator[np.ndarray]:
    """Bootstrap resamples of ``n`` units as the count of each unit in each resample, in
    chunks of shape (b, n) of at most ``max_draws`` draws: a statistic that is a sum over
    units (or, as a rank correlation, a function of weighted units) is then resampled by a
    product with the counts, without copying the units."""
    rng = np.random.default_rng(seed)
    per_chunk = max(1, max_draws // max(n, 1))
    for start in range(0, resamples, per_chunk):
        b = min(per_chunk, resamples - start)
        picks = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
        yield np.bincount(picks.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)


def bootstrap_mean_ci(
    values: np.ndarray, *, confidence: float = 0.95, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """(low, high) of ``mean_ci`` as a pair, (nan, nan) for no values: a run's or report's
    per-metric interval, made like a comparison's."""
    if len(values) == 0:
        return (float("nan"), float("nan"))
    found = mean_ci(values, confidence=confidence, resamples=resamples, seed=seed)
    return (found.low, found.high)


def _acceleration(centred: np.ndarray) -> float:
    """BCa's acceleration from the jackknife; for a mean the leave-one-out estimates are
    (n*mean - d_i)/(n - 1), so it reduces to the sample skewness over 6*sqrt(n) (``centred``
    not all 0). The skewness does not change with the values' scale: they are scaled to a
    largest magnitude of 1 first, as values differing by about 1e-148 made the denominator
    underflow to 0 (found by Hypothesis)."""
    unit = centred / float(np.abs(centred).max())
    square = _sum_of_squares(unit)
    cubes = float(np.einsum("i,i,i->", unit, unit, unit))
    return cubes / (6.0 * square * math.sqrt(square))


def _bca_levels(z0: float, a: float, tails: Sequence[float]) -> list[float] | None:
    """BCa's adjusted quantile levels, or None where they are undefined."""
    out = []
    for tail in tails:
        w = z0 + _NORMAL.inv_cdf(tail)
        denominator = 1.0 - a * w
        if denominator <= 0.0:
            return None
        out.append(_NORMAL.cdf(z0 + w / denominator))
    return out if all(0.0 < level < 1.0 for level in out) else None


def _percentile(means: np.ndarray, tails: Sequence[float], note: Note) -> Interval:
    low, high = np.quantile(means, tails)
    return Interval(float(low), float(high), "percentile", note)


def _abc(diffs: np.ndarray, centred: np.ndarray, tails: Sequence[float]) -> Interval:
    """The ABC interval of a mean: theta + sigma * w / (1 - a*w)^2 with w = z0 + z_tail;
    for a mean z0 = a (the bootstrap median sits skewness/6 standard errors off)."""
    n = len(diffs)
    sigma = math.sqrt(_sum_of_squares(centred)) / n
    a = _acceleration(centred)
    theta = float(diffs.mean())
    ends = []
    for tail in tails:
        w = a + _NORMAL.inv_cdf(tail)
        ends.append(theta + sigma * w / (1.0 - a * w) ** 2)
    return Interval(ends[0], ends[1], "abc")


def mean_ci(
    diffs: np.ndarray, *, confidence: float = 0.95, resamples: int = RESAMPLES, seed: int = 0
) -> Interval:
    """CI of a mean (of paired differences, in a comparison): BCa where it applies (bias
    correction from the share of resampled means below the observed mean, ties counted
    half; acceleration from the jackknife), the ABC interval from ``ANALYTIC_FROM`` values
    on, and the percentile interval, with a note saying why, where BCa is undefined."""
    n = len(diffs)
    if n == 0:
        raise ValueError("no pairs: a confidence interval needs at least one difference")
    tails = [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0]
    theta = float(diffs.mean())
    if n == 1 or float(diffs.min()) == float(diffs.max()):
        note = (
            _bca_note("bca_single", "undefined: a single pair")
            if n == 1
            else _bca_note("bca_equal", "undefined: all differences are equal")
        )
        return Interval(theta, theta, "percentile", note)
    centred = diffs - theta
    square = _sum_of_squares(centred)
    if not 0.0 < square < math.inf:  # spread under- or overflows: no jackknife to speak of
        means = _resampled_means(diffs, resamples, seed)
        return _percentile(
            means, tails, _bca_note("bca_jackknife", "undefined: degenerate jackknife")
        )
    if n >= ANALYTIC_FROM:
        return _abc(diffs, centred, tails)
    means = _resampled_means(diffs, resamples, seed)
    if n < BCA_MIN_PAIRS:
        few = _bca_note("bca_few", f"not used: fewer than {BCA_MIN_PAIRS} pairs", n=BCA_MIN_PAIRS)
        return _percentile(means, tails, few)
    below = (np.count_nonzero(means < theta) + 0.5 * np.count_nonzero(means == theta)) / len(means)
    if not 0.0 < below < 1.0:
        one_side = _bca_note("bca_one_side", "undefined: no resampled mean on one side")
        return _percentile(means, tails, one_side)
    levels = _bca_levels(_NORMAL.inv_cdf(below), _acceleration(centred), tails)
    if levels is None:
        out_of_range = _bca_note("bca_levels", "undefined: adjusted levels out of range")
        return _percentile(means, tails, out_of_range)
    low, high = np.quantile(means, levels)
    return Interval(float(low), float(high), "bca")


def _exact_sign_flip(nonzero: np.ndarray, observed: float) -> float:
    """p over all 2^m sign patterns (the observed one included)."""
    m = len(nonzero)
    patterns = np.arange(2**m, dtype=np.int64)[:, None] >> np.arange(m, dtype=np.int64)
    signs = 1.0 - 2.0 * (patterns & 1).astype(np.float64)
    return float(np.mean(np.abs(np.einsum("ij,j->i", signs, nonzero)) >= observed))


def _sampled_sign_flip(nonzero: np.ndarray, observed: float, resamples: int, seed: int) -> float:
    """p = (1 + #{|T*| >= |T|}) / (1 + resamples), signs drawn as random bits in chunks."""
    m = len(nonzero)
    rng = np.random.default_rng(seed)
    total = float(nonzero.sum())
    hits = 0
    per_chunk = max(1, _MAX_DRAWS_PER_CHUNK // m)
    for start in range(0, resamples, per_chunk):
        count = min(per_chunk, resamples - start)
        raw = rng.integers(0, 256, size=(count, (m + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(raw, axis=1, count=m).astype(np.float64)
        # sum of s_i d_i with s_i = 2*bit_i - 1
        flipped = 2.0 * np.einsum("ij,j->i", bits, nonzero) - total
        hits += int(np.count_nonzero(np.abs(flipped) >= observed))
    return (1 + hits) / (1 + resamples)


#: scores that are multiples of 1/k for any k <= 12 (grades, pass/fail, 2 of 3 statements)
#: are multiples of 1/27720 (the least common multiple of 1..12)
_GRID = 27_720


def _lattice_step(magnitudes: np.ndarray) -> float:
    """The largest g with every |d| a multiple of it, where |d| are multiples of 1/_GRID
    (as judged and 0/1 scores are); 0.0 for data off such a grid."""
    if float(magnitudes[-1]) * _GRID >= 2.0**52:
        return 0.0
    for part in (magnitudes[:64], magnitudes):  # continuous data fails on the first few
        scaled = part * _GRID
        whole = np.rint(scaled)
        if np.any(np.abs(scaled - whole) > 1e-6 * (1.0 + scaled)):
            return 0.0
    return float(np.gcd.reduce(whole.astype(np.int64))) / _GRID


def _signed_total(diffs: np.ndarray) -> float:
    """sum(diffs), the same whatever the row order and exactly negated for -diffs: the
    positive and the negative parts are each summed in sorted order."""
    positive = np.sort(diffs[diffs > 0.0])
    negative = np.sort(-diffs[diffs < 0.0])
    return float(positive.sum()) - float(negative.sum())


def sign_flip_test(
    diffs: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0
) -> tuple[float, PMethod]:
    """Two-sided p of "mean difference = 0" by flipping the sign of each pair's difference
    (exchangeable under the null), and the route used: exact enumeration for at most 12
    non-zero differences, Monte-Carlo below ``ANALYTIC_FROM``, the normal law above (with a
    continuity correction when the differences lie on a grid). Zero differences are the
    same under every flip, so only non-zero ones count; flips act on the sorted |d| (the
    same law), so neither row order nor the sign of every difference (swapping the runs)
    changes p."""
    nonzero = np.sort(np.abs(diffs[diffs != 0.0])).astype(np.float64)
    m = len(nonzero)
    if m == 0:
        return (1.0, "exact")
    statistic = abs(_signed_total(diffs))
    # |T*| equal to |T| up to rounding counts as reaching it
    observed = statistic - 1e-9 * max(statistic, float(nonzero[-1]))
    if m <= _EXACT_UP_TO:
        return (_exact_sign_flip(nonzero, observed), "exact")
    if m < ANALYTIC_FROM:
        return (_sampled_sign_flip(nonzero, observed, resamples, seed), "randomisation")
    # on a lattice T* moves in steps of 2g: the continuity correction takes half a step
    reach = max(0.0, statistic - _lattice_step(nonzero))
    z = reach / math.sqrt(_sum_of_squares(nonzero))
    return (math.erfc(z / math.sqrt(2.0)), "normal")


def adjusted(p_values: Sequence[float], correction: Correction) -> list[float]:
    """Bonferroni's adjusted p-values (each times the family's size, capped at 1), or the
    raw ones with no correction."""
    m = len(p_values) if correction == "bonferroni" else 1
    return [min(1.0, m * float(p)) for p in p_values]


def ci_note(values: np.ndarray) -> str | None:
    """Why an interval over ``values`` says little, or None: fewer than ``SMALL_SAMPLE``
    values, or all of them equal (the bootstrap then has nothing to resample)."""
    n = len(values)
    if n and float(values.min()) == float(values.max()):
        return f"interval not informative: all {n} values equal"
    if n < SMALL_SAMPLE:
        return f"interval not informative: {n} values (fewer than {SMALL_SAMPLE})"
    return None


def verdict(
    delta: float,
    ci: Interval,
    p_adjusted: float,
    *,
    alpha: float = 0.05,
    margin: float | None = None,
    informative: bool = True,
) -> tuple[Verdict, Note | None]:
    """better / worse when the adjusted p is at most ``alpha`` and the interval excludes 0
    on the side of the mean difference (other - base, higher scores better); equivalent when
    a ``margin`` was given and an informative interval lies inside (-margin, +margin); else
    no_evidence. Also a note when the test and the interval disagree."""
    significant = p_adjusted <= alpha and delta != 0.0
    side = 1 if ci.low > 0.0 else -1 if ci.high < 0.0 else 0
    if significant and side == (1 if delta > 0.0 else -1):
        return ("better" if delta > 0.0 else "worse"), None
    note = None
    if (significant or side) and informative:  # a flat interval disagrees by nature
        note = Note(
            "disagree",
            f"the test (adjusted p {p_adjusted:.3g}) and the interval "
            f"[{ci.low:+.4g}, {ci.high:+.4g}] disagree at alpha {alpha:g}: more rows decide",
            {"p": p_adjusted, "low": ci.low, "high": ci.high, "alpha": alpha},
        )
    if margin is not None and informative and -margin < ci.low and ci.high < margin:
        return "equivalent", note
    return "no_evidence", note


def _oriented(diffs: np.ndarray) -> tuple[float, np.ndarray]:
    """(sign, sorted sign * diffs) with the sign making the sum non-negative: the
    resampling then sees the same array whichever run is the base, and its interval mirrors
    exactly when the runs are swapped (unless the mean is exactly 0)."""
    sign = -1.0 if _signed_total(diffs) < 0.0 else 1.0
    return sign, np.sort(sign * diffs)


def _mirrored(interval: Interval, sign: float) -> Interval:
    if sign > 0.0:
        return interval
    return Interval(-interval.high, -interval.low, interval.method, interval.note)


def compare_paired(
    diffs: Mapping[str, np.ndarray],
    *,
    alpha: float = 0.05,
    correction: Correction = "bonferroni",
    margin: float | None = None,
    seed: int = 0,
) -> dict[str, PairedComparison]:
    """Per metric with at least one pair: mean difference, CI at 1 - alpha/m (Bonferroni;
    1 - alpha with no correction), sign-flip p, adjusted p across these m metrics and the
    verdict. Metrics without pairs are left out (and out of the family). Row order does not
    matter; swapping the runs mirrors every answer."""
    tested = {name: d for name, d in diffs.items() if len(d)}
    raw = {name: sign_flip_test(d, seed=seed) for name, d in tested.items()}
    p_adjusted = dict(zip(raw, adjusted([p for p, _ in raw.values()], correction), strict=True))
    family = len(tested) if correction == "bonferroni" else 1
    level = 1.0 - alpha / max(family, 1)
    # enough draws that each tail holds ~50 of them, however small alpha/m is
    resamples = max(RESAMPLES, math.ceil(100.0 / (1.0 - level)))
    out: dict[str, PairedComparison] = {}
    for name, d in tested.items():
        sign, oriented = _oriented(d)
        delta = sign * float(oriented.mean())
        ci = _mirrored(mean_ci(oriented, confidence=level, resamples=resamples, seed=seed), sign)
        note = ci_note(d)
        found, why = verdict(
            delta, ci, p_adjusted[name], alpha=alpha, margin=margin, informative=note is None
        )
        out[name] = PairedComparison(
            pairs=len(d),
            delta=delta,
            ci=ci,
            ci_level=level,
            p_value=raw[name][0],
            p_method=raw[name][1],
            p_adjusted=p_adjusted[name],
            verdict=found,
            ci_note=note,
            verdict_note=why,
        )
    return out


def mean_summary(
    scores: np.ndarray, *, confidence: float = 0.95, resamples: int = 1000
) -> dict[str, float | int | str | None]:
    """A metric's summary over its scores (NaN where null): mean, count, nulls, the mean's
    bootstrap CI and ``ci_note`` (why the interval is not informative: few values, or all
    equal); ``small_sample`` is true under ``SMALL_SAMPLE`` scored values."""
    values = scores[~np.isnan(scores)]
    low, high = bootstrap_mean_ci(values, confidence=confidence, resamples=resamples)
    scored = len(values) > 0
    return {
        "mean": float(values.mean()) if scored else None,
        "count": len(values),
        "null": len(scores) - len(values),
        "ci95_low": low if scored else None,
        "ci95_high": high if scored else None,
        "ci_note": ci_note(values) if scored else None,
        "small_sample": len(values) < SMALL_SAMPLE,
    }
