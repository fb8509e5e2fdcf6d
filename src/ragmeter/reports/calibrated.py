"""A metric's mean corrected by human labels: the prediction-powered estimate (PPI++,
Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference") of the
mean score people would give, from the judge's scores of all N rows and human values of n
of them, with a normal confidence interval that accounts for the judge's errors.

    theta = lam * mean_N(f) + mean_n(Y - lam * f)

f is the judge's score, Y the human value. lam = 1 is plain PPI (the judge's mean plus the
mean human-judge difference on the labelled rows), lam = 0 the labels alone; PPI++ picks
the lam that minimises the variance, estimated from the data and clipped to [0, 1]: the
interval is then never wider than the labels-only one (asymptotically) and is narrower the
better the judge's scores track the labels, whatever the judge's bias.

The labelled rows are part of the N rows. Writing U for the N - n unlabelled ones,
theta = mean_n(Y) - mu * (mean_n(f) - mean_U(f)) with mu = lam * (N - n) / N, so theta is
PPI++ with a labelled set and a *disjoint*, independent unlabelled set, and its variance
has two independent parts: var_n(Y - mu f) / n + mu^2 var_U(f) / (N - n) (``ppi_py``'s
``ppi_mean_ci`` with ``lam = mu``). The variance-optimal lam in the all-rows form is the
slope cov(Y, f) / var(f): cov over the labelled rows, var(f) over all N scored rows (the
judge scored them all), as ``ppi_py`` estimates it. Only where that slope exceeds 1 do the
two differ: here lam is clipped to 1 (never more weight on the judge than plain PPI), in
``ppi_py`` mu is. The target is the mean of the population the rows are drawn from (for the
mean of these N rows the interval is slightly conservative).

Valid when the labelled rows were picked at random among the scored rows (the review
queue's "random" rule), or with known inclusion probabilities pi (a queue stratified by
score, failures or disagreement): then the residual term is the Hajek (ratio
Horvitz-Thompson) mean, sum(w (Y - lam f)) / sum(w) with w = 1 / pi, lam the w-weighted
slope, and the variance the with-replacement linearisation of that ratio,
n / (n - 1) * sum((w~ (e - e_w))^2) with w~ = w / sum(w), plus var_w(Y) / N for the
sampling of the N rows themselves (conservative: no finite-population correction). Rows
picked by hand, or by a rule whose probabilities are unknown, give a biased estimate that
no interval repairs. Labelled rows the judge did not score are dropped and counted; rows
without a judge score are not among the N."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError
from ragmeter.reports.agreement import note_dict
from ragmeter.reports.stats import SMALL_SAMPLE, Note

__all__ = ["CalibratedMean", "calibrated_mean"]


@dataclass(frozen=True)
class CalibratedMean:
    """The PPI++ estimate of a metric's mean with its interval (None where there are no
    usable labels, low and high None with one label), ``n_labelled`` labels used of
    ``n_rows`` scored rows, the ``lam`` used, the judge's own mean over the rows, the
    labels' own mean (Hajek-weighted with inclusion probabilities), ``dropped`` labelled
    rows the judge did not score, and a note (few labels, dropped rows, undefined)."""

    value: float | None
    low: float | None
    high: float | None
    n_labelled: int
    n_rows: int
    lam: float
    judge_mean: float | None
    labels_mean: float | None
    note: Note | None
    dropped: int = 0
    confidence: float = 0.95
    weighted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "n_labelled": self.n_labelled,
            "n_rows": self.n_rows,
            "lam": self.lam,
            "judge_mean": self.judge_mean,
            "labels_mean": self.labels_mean,
            "dropped": self.dropped,
            "confidence": self.confidence,
            "weighted": self.weighted,
            "note": note_dict(self.note),
        }


def _note(n: int, dropped: int) -> Note | None:
    lost = f"; {dropped} labelled rows without a judge score dropped" if dropped else ""
    if n == 0:
        return Note(
            "calibrated_no_labels",
            f"no labelled row with a judge score{lost}",
            {"dropped": dropped},
        )
    if n == 1:
        return Note("calibrated_one_label", f"one label: no interval{lost}", {"dropped": dropped})
    if n < SMALL_SAMPLE:
        return Note(
            "calibrated_few_labels",
            f"{n} labels (fewer than {SMALL_SAMPLE}): interval not reliable{lost}",
            {"n": n, "min": SMALL_SAMPLE, "dropped": dropped},
        )
    if dropped:
        return Note("calibrated_dropped", lost[2:], {"dropped": dropped})
    return None


def _inputs(
    judge: np.ndarray, labelled: np.ndarray, human: np.ndarray, inclusion: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    f = np.asarray(judge, dtype=np.float64).reshape(-1)
    index = np.asarray(labelled).reshape(-1)
    y = np.asarray(human, dtype=np.float64).reshape(-1)
    if len(index) and not np.issubdtype(index.dtype, np.integer):
        raise ConfigError("calibrated mean: labelled must be row indices (integers)")
    index = index.astype(np.int64)
    if len(index) != len(y):
        raise ConfigError(f"calibrated mean: {len(index)} labelled rows but {len(y)} values")
    if len(index) and (index.min() < 0 or index.max() >= len(f)):
        raise ConfigError(f"calibrated mean: a labelled index is outside the {len(f)} rows")
    if len(np.unique(index)) != len(index):
        raise ConfigError("calibrated mean: a row is labelled twice (give one value per row)")
    pi = None
    if inclusion is not None:
        pi = np.asarray(inclusion, dtype=np.float64).reshape(-1)
        if len(pi) != len(index):
            raise ConfigError(
                f"calibrated mean: {len(pi)} inclusion probabilities for {len(index)} rows"
            )
        if not np.all((pi > 0.0) & (pi <= 1.0)):
            raise ConfigError("calibrated mean: inclusion probabilities must lie in (0, 1]")
    return f, index, y, pi


def _slope(y: np.ndarray, f: np.ndarray, weights: np.ndarray, var_f: float) -> float:
    """The variance-optimal lam: the (weighted) covariance of Y and f over the labelled
    rows divided by var(f) over all scored rows, clipped to [0, 1]; 0 when f is constant."""
    if not var_f > 0.0:
        return 0.0
    share = weights / weights.sum()
    cov = float(np.sum(share * (y - share @ y) * (f - share @ f)))
    return min(1.0, max(0.0, cov / var_f))


def _random(
    y: np.ndarray, f_labelled: np.ndarray, f_rest: np.ndarray, lam: float
) -> tuple[float, float]:
    """(theta, variance) with labelled rows picked at random: the disjoint form."""
    n, rest = len(y), len(f_rest)
    mu = lam * rest / (n + rest)
    residual = y - mu * f_labelled
    theta = float(residual.mean()) + (mu * float(f_rest.mean()) if rest else 0.0)
    variance = float(residual.var()) / n + (mu * mu * float(f_rest.var()) / rest if rest else 0.0)
    return theta, variance


def _weighted(
    y: np.ndarray,
    f_labelled: np.ndarray,
    weights: np.ndarray,
    judge_mean: float,
    n_rows: int,
    lam: float,
) -> tuple[float, float]:
    """(theta, variance) with inclusion probabilities: the Hajek residual mean."""
    n = len(y)
    share = weights / weights.sum()
    residual = y - lam * f_labelled
    centre = float(share @ residual)
    theta = lam * judge_mean + centre
    spread = float(np.sum((share * (residual - centre)) ** 2)) * n / (n - 1) if n > 1 else 0.0
    labels_var = float(share @ (y - share @ y) ** 2)
    return theta, spread + labels_var / n_rows


def calibrated_mean(
    judge: np.ndarray,
    labelled: np.ndarray,
    human: np.ndarray,
    *,
    inclusion: np.ndarray | None = None,
    confidence: float = 0.95,
    lam: float | None = None,
) -> CalibratedMean:
    """The PPI++ mean (module docstring) of ``judge`` (N scores, NaN = not scored)
    corrected by ``human`` values of the rows at indices ``labelled`` (NaN values are not
    labels), with their ``inclusion`` probabilities when they were not picked uniformly at
    random. ``lam`` fixes the power-tuning parameter (1: plain PPI, 0: labels only)
    instead of estimating it."""
    f, index, y, pi = _inputs(judge, labelled, human, inclusion)
    scored = ~np.isnan(f)
    has_label = ~np.isnan(y)
    usable = has_label & scored[index]
    dropped = int(np.count_nonzero(has_label & ~scored[index]))
    index, y = index[usable], y[usable]
    weights = np.ones(len(y)) if pi is None else 1.0 / pi[usable]
    n, n_rows = len(y), int(scored.sum())
    judge_mean = float(f[scored].mean()) if n_rows else None
    note = _note(n, dropped)
    if n == 0 or judge_mean is None:
        fixed = 0.0 if lam is None else lam
        return CalibratedMean(
            None,
            None,
            None,
            0,
            n_rows,
            fixed,
            judge_mean,
            None,
            note,
            dropped,
            confidence,
            pi is not None,
        )
    f_labelled = f[index]
    var_f = float(f[scored].var(ddof=1)) if n_rows > 1 else 0.0
    used = _slope(y, f_labelled, weights, var_f) if lam is None else float(lam)
    labels_mean = float(weights @ y / weights.sum())
    if pi is None:
        rest = scored.copy()
        rest[index] = False
        theta, variance = _random(y, f_labelled, f[rest], used)
    else:
        theta, variance = _weighted(y, f_labelled, weights, judge_mean, n_rows, used)
    low = high = None
    if n > 1:
        half = NormalDist().inv_cdf((1.0 + confidence) / 2.0) * math.sqrt(max(variance, 0.0))
        low, high = theta - half, theta + half
    return CalibratedMean(
        theta,
        low,
        high,
        n,
        n_rows,
        used,
        judge_mean,
        labels_mean,
        note,
        dropped,
        confidence,
        pi is not None,
    )
