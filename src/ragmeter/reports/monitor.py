"""A metric over time, from its scores with their times (production traces scored by online
rules): hour or day buckets (UTC) with each bucket's mean, its confidence interval and n,
and a drift test of a recent window against a baseline (an earlier window, or a stored
offline run's scores of the same metric).

The bucket's interval is a run summary's (``stats.mean_summary``: the same interval, the
same flag under ``SMALL_SAMPLE`` values). The drift test compares two independent samples,
so it is a two-sample permutation test of the difference in means (recent - baseline), and
its interval a two-sample bootstrap one; across metrics both are corrected as a comparison
of runs corrects them (``stats.adjusted``: Bonferroni, the p-values times the family's size
and each interval at 1 - alpha/m) and the verdict is a comparison's (``stats.verdict``:
better, worse or no evidence of a difference). Every random draw is seeded."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from ragmeter.reports.stats import (
    _MAX_DRAWS_PER_CHUNK,
    _NORMAL,
    ANALYTIC_FROM,
    BCA_MIN_PAIRS,
    RESAMPLES,
    Correction,
    Interval,
    Note,
    PMethod,
    Verdict,
    _acceleration,
    _bca_levels,
    _bca_note,
    _resampled_means,
    adjusted,
    ci_note,
    mean_summary,
    verdict,
)

__all__ = [
    "BUCKETS",
    "MAX_BUCKETS",
    "NORMAL_FROM",
    "Bucket",
    "BucketStats",
    "Drift",
    "bucket_series",
    "difference_ci",
    "drift",
    "permutation_test",
]

Bucket = Literal["hour", "day"]
#: a bucket's length in nanoseconds (buckets start on the hour, or at midnight UTC)
BUCKETS: dict[Bucket, int] = {"hour": 3_600 * 10**9, "day": 86_400 * 10**9}
#: the most buckets one series may have (a year of days; six weeks of hours)
MAX_BUCKETS = 1_000
#: both samples at least this large: the permutation law of the difference is read from its
#: normal form (its exact mean 0 and variance), which is then within ~0.005 of scipy's
#: permutation p near 0.05, 0/1 and graded scores included (tests/unit/test_monitor.py)
NORMAL_FROM = ANALYTIC_FROM
#: pools up to this size are split by rows of random keys, larger ones a draw at a time
_KEYED_UP_TO = 2_000
#: up to this many ways to split the pooled values, the test enumerates all of them
_EXACT_SPLITS = 5_000


@dataclass(frozen=True)
class BucketStats:
    """One bucket: its start (ns since the epoch, UTC), the mean of its scored values with
    the mean's 95% interval, ``n`` scored values and ``nulls``; ``ci_note`` says why the
    interval says little (``small_sample``: fewer than ``SMALL_SAMPLE`` values)."""

    start_ns: int
    mean: float | None
    ci95_low: float | None
    ci95_high: float | None
    n: int
    nulls: int
    ci_note: str | None
    small_sample: bool


def bucket_series(times_ns: np.ndarray, values: np.ndarray, bucket: Bucket) -> list[BucketStats]:
    """The buckets holding at least one value (null scores as NaN count as ``nulls``), in
    time order. ValueError past ``MAX_BUCKETS`` buckets from the first to the last value."""
    if len(times_ns) != len(values):
        raise ValueError(f"{len(times_ns)} times but {len(values)} values")
    if len(times_ns) == 0:
        return []
    width = BUCKETS[bucket]
    starts = (np.asarray(times_ns, dtype=np.int64) // width) * width
    span = int((starts.max() - starts.min()) // width) + 1
    if span > MAX_BUCKETS:
        raise ValueError(
            f"{span} {bucket} buckets from the first value to the last; at most {MAX_BUCKETS} "
            "(choose a shorter time range or day buckets)"
        )
    order = np.argsort(starts, kind="stable")
    starts, scores = starts[order], np.asarray(values, dtype=np.float64)[order]
    keys, first = np.unique(starts, return_index=True)
    out = []
    for key, part in zip(keys, np.split(scores, first[1:]), strict=True):
        summary = mean_summary(part)
        out.append(
            BucketStats(
                start_ns=int(key),
                mean=summary["mean"],  # type: ignore[arg-type]
                ci95_low=summary["ci95_low"],  # type: ignore[arg-type]
                ci95_high=summary["ci95_high"],  # type: ignore[arg-type]
                n=int(summary["count"]),  # type: ignore[arg-type]
                nulls=int(summary["null"]),  # type: ignore[arg-type]
                ci_note=summary["ci_note"],  # type: ignore[arg-type]
                small_sample=bool(summary["small_sample"]),
            )
        )
    return out


# -- the two-sample permutation test ------------------------------------------------------


def _split_sums_exact(pooled: np.ndarray, n_recent: int) -> np.ndarray:
    """The sum of the "recent" part of every split of ``pooled`` (the observed one too)."""
    picks = np.array(list(combinations(range(len(pooled)), n_recent)), dtype=np.int64)
    sums: np.ndarray = pooled[picks].sum(axis=1)
    return sums


def _split_sums_sampled(pooled: np.ndarray, k: int, resamples: int, seed: int) -> np.ndarray:
    """The sum of ``k`` values drawn without replacement from ``pooled``, ``resamples``
    times: a small pool as rows of random keys (their ``k`` smallest), a large one a draw at
    a time in O(k), so a small window against a large baseline stays cheap."""
    rng = np.random.default_rng(seed)
    size = len(pooled)
    if size > _KEYED_UP_TO:
        draws = (
            pooled[rng.choice(size, k, replace=False, shuffle=False)].sum()
            for _ in range(resamples)
        )
        return np.fromiter(draws, dtype=np.float64, count=resamples)
    sums = np.empty(resamples, dtype=np.float64)
    per_chunk = max(1, _MAX_DRAWS_PER_CHUNK // size)
    for start in range(0, resamples, per_chunk):
        count = min(per_chunk, resamples - start)
        picks = np.argpartition(rng.random((count, size)), k - 1, axis=1)[:, :k]
        sums[start : start + count] = pooled[picks].sum(axis=1)
    return sums


def permutation_test(
    recent: np.ndarray, baseline: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0
) -> tuple[float, PMethod]:
    """Two-sided p of "the two windows' means are equal": the values of both are pooled and
    split again at random (exchangeable under the null); p is the share of splits whose
    |mean difference| reaches the observed one. Every split when there are at most
    ``_EXACT_SPLITS`` ("exact"); ``resamples`` random ones otherwise ("randomisation", p =
    (1 + hits) / (1 + resamples)); from ``NORMAL_FROM`` values on each side the normal law of
    the difference, whose permutation mean is 0 and variance N * SS / (n_r * n_b * (N - 1))
    ("normal")."""
    r = np.asarray(recent, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    n_r, n_b = len(r), len(b)
    if n_r == 0 or n_b == 0:
        raise ValueError("a permutation test needs values on both sides")
    pooled = np.sort(np.concatenate([r, b]))  # sorted: the answer ignores the values' order
    total, size = float(pooled.sum()), n_r + n_b
    observed = abs(float(r.mean()) - float(b.mean()))
    centred = pooled - total / size
    spread = float(np.einsum("i,i->", centred, centred))
    if pooled[0] == pooled[-1] or spread == 0.0:  # every split gives the same difference
        return (1.0, "exact")
    if min(n_r, n_b) >= NORMAL_FROM:
        sd = math.sqrt(size * spread / (n_r * n_b * (size - 1)))
        return (math.erfc(observed / sd / math.sqrt(2.0)), "normal")
    # |T*| equal to |T| up to rounding counts as reaching it
    reach = observed - 1e-9 * max(observed, float(np.abs(pooled).max()))
    if math.comb(size, n_r) <= _EXACT_SPLITS:
        sums = _split_sums_exact(pooled, n_r)
        differences = sums / n_r - (total - sums) / n_b
        return (float(np.mean(np.abs(differences) >= reach)), "exact")
    # T* is fixed by the sum of either part: the smaller one is drawn
    k, other = min(n_r, n_b), max(n_r, n_b)
    sums = _split_sums_sampled(pooled, k, resamples, seed)
    differences = sums / k - (total - sums) / other
    hits = int(np.count_nonzero(np.abs(differences) >= reach))
    return ((1 + hits) / (1 + resamples), "randomisation")


# -- the interval of the difference -------------------------------------------------------


def _influence(r: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each value's influence on mean(r) - mean(b): (r_i - mean r)/n_r and -(b_j - mean b)/n_b;
    their sum of squares is the plug-in variance, their skewness BCa's acceleration."""
    return np.concatenate([(r - r.mean()) / len(r), -(b - b.mean()) / len(b)])


def _analytic(theta: float, influence: np.ndarray, tails: list[float]) -> Interval:
    """The ABC interval of a linear statistic (BCa's analytic form; z0 = a for it)."""
    sigma = math.sqrt(float(np.einsum("i,i->", influence, influence)))
    a = _acceleration(influence)
    ends = []
    for tail in tails:
        w = a + _NORMAL.inv_cdf(tail)
        ends.append(theta + sigma * w / (1.0 - a * w) ** 2)
    return Interval(ends[0], ends[1], "abc")


def _percentile(draws: np.ndarray, tails: list[float], note: Note) -> Interval:
    low, high = np.quantile(draws, tails)
    return Interval(float(low), float(high), "percentile", note)


def difference_ci(
    recent: np.ndarray,
    baseline: np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Interval:
    """CI of mean(recent) - mean(baseline), each sample resampled on its own: BCa (bias from
    the share of resampled differences below the observed one, acceleration from each
    value's influence), its analytic form (ABC) from ``ANALYTIC_FROM`` values on each side,
    and the percentile interval, with a note saying why, where BCa is undefined."""
    r = np.asarray(recent, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if len(r) == 0 or len(b) == 0:
        raise ValueError("an interval of a difference needs values on both sides")
    tails = [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0]
    theta = float(r.mean()) - float(b.mean())
    influence = _influence(r, b)
    if not np.any(influence):
        return Interval(
            theta, theta, "percentile", _bca_note("bca_equal", "undefined: all values are equal")
        )
    square = float(np.einsum("i,i->", influence, influence))
    if not 0.0 < square < math.inf:  # spread under- or overflows: no acceleration to speak of
        draws = _resampled_means(r, resamples, seed) - _resampled_means(b, resamples, seed + 1)
        return _percentile(
            draws, tails, _bca_note("bca_jackknife", "undefined: degenerate jackknife")
        )
    if min(len(r), len(b)) >= ANALYTIC_FROM:
        return _analytic(theta, influence, tails)
    draws = _resampled_means(r, resamples, seed) - _resampled_means(b, resamples, seed + 1)
    if min(len(r), len(b)) < BCA_MIN_PAIRS:
        few = _bca_note("bca_few", f"not used: fewer than {BCA_MIN_PAIRS} values", n=BCA_MIN_PAIRS)
        return _percentile(draws, tails, few)
    below = (np.count_nonzero(draws < theta) + 0.5 * np.count_nonzero(draws == theta)) / len(draws)
    if not 0.0 < below < 1.0:
        return _percentile(
            draws,
            tails,
            _bca_note("bca_one_side", "undefined: no resampled difference on one side"),
        )
    levels = _bca_levels(_NORMAL.inv_cdf(below), _acceleration(influence), tails)
    if levels is None:
        return _percentile(
            draws, tails, _bca_note("bca_levels", "undefined: adjusted levels out of range")
        )
    low, high = np.quantile(draws, levels)
    return Interval(float(low), float(high), "bca")


# -- the drift of several metrics ---------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    """One metric's recent window against its baseline: both means and sizes, the
    difference (recent - baseline) with its interval at ``ci_level`` (the family's level
    under a correction), raw and adjusted p, the verdict (higher scores better), why the
    interval is not informative and why the verdict is cautious."""

    recent_n: int
    baseline_n: int
    recent_mean: float
    baseline_mean: float
    delta: float
    ci: Interval
    ci_level: float
    p_value: float
    p_method: PMethod
    p_adjusted: float
    verdict: Verdict
    ci_note: str | None = None
    verdict_note: Note | None = None


def _sides_note(recent: np.ndarray, baseline: np.ndarray) -> str | None:
    for side, values in (("recent window", recent), ("baseline", baseline)):
        note = ci_note(values)
        if note is not None:
            return f"{side}: {note}"
    return None


def drift(
    samples: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    alpha: float = 0.05,
    correction: Correction = "bonferroni",
    seed: int = 0,
) -> dict[str, Drift]:
    """Per metric with scored values on both sides ((recent, baseline), nulls left out
    before): the permutation test, its p adjusted across these m metrics as a comparison
    adjusts it, the interval at 1 - alpha/m and the comparison's verdict. Metrics lacking a
    side are left out (and out of the family)."""
    tested = {
        name: (np.asarray(r, dtype=np.float64), np.asarray(b, dtype=np.float64))
        for name, (r, b) in samples.items()
        if len(r) and len(b)
    }
    raw = {name: permutation_test(r, b, seed=seed) for name, (r, b) in tested.items()}
    p_adjusted = dict(zip(raw, adjusted([p for p, _ in raw.values()], correction), strict=True))
    family = len(tested) if correction == "bonferroni" else 1
    level = 1.0 - alpha / max(family, 1)
    # enough draws that each tail holds ~50 of them, however small alpha/m is
    resamples = max(RESAMPLES, math.ceil(100.0 * max(family, 1) / alpha))  # 100 / (1 - level)
    out: dict[str, Drift] = {}
    for name, (r, b) in tested.items():
        ci = difference_ci(r, b, confidence=level, resamples=resamples, seed=seed)
        delta = float(r.mean()) - float(b.mean())
        note = _sides_note(r, b)
        found, why = verdict(delta, ci, p_adjusted[name], alpha=alpha, informative=note is None)
        out[name] = Drift(
            recent_n=len(r),
            baseline_n=len(b),
            recent_mean=float(r.mean()),
            baseline_mean=float(b.mean()),
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
