"""Percentile bootstrap confidence interval of a mean."""

from __future__ import annotations

import numpy as np

__all__ = ["bootstrap_mean_ci"]

_MAX_DRAWS_PER_CHUNK = 4_000_000


def bootstrap_mean_ci(
    values: np.ndarray, *, confidence: float = 0.95, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """(low, high) of the mean by resampling ``values`` with replacement; seeded, so a report
    gives the same interval every time it is printed."""
    n = len(values)
    if n == 0:
        return (float("nan"), float("nan"))
    if n == 1 or float(values.min()) == float(values.max()):
        return (float(values[0]), float(values[0]))
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=np.float64)
    per_chunk = max(1, _MAX_DRAWS_PER_CHUNK // n)
    for start in range(0, resamples, per_chunk):
        count = min(per_chunk, resamples - start)
        picks = rng.integers(0, n, size=(count, n))
        means[start : start + count] = values[picks].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return (float(low), float(high))
