"""Krippendorff's alpha and its unit-bootstrap replicates (``agreement.reviewers_alpha``
is the public face): alpha = 1 - D_o / D_e from the coincidence matrix o of pairable values
(units with two or more), o_ck = sum_u n_uc (n_uk - [c = k]) / (m_u - 1), with the
nominal, ordinal (from the margins n_c: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2) or interval
((c - k)^2) metric. Krippendorff (2011), "Computing Krippendorff's alpha-reliability"."""

from __future__ import annotations

from typing import Literal

import numpy as np

from ragmeter.reports.stats import unit_counts

__all__ = ["categorical_alpha", "interval_alpha"]


def _alpha_from_coincidences(
    coincidences: np.ndarray, level: Literal["nominal", "ordinal"]
) -> np.ndarray:
    """alpha = 1 - (n - 1) * sum(o * delta) / sum(n_c * n_k * delta) of each coincidence
    matrix (..., k, k), with the nominal or ordinal metric delta (ordinal: from the
    margins, so per matrix). NaN where the expected disagreement is 0."""
    margins = coincidences.sum(axis=-1)
    total = margins.sum(axis=-1)
    k = coincidences.shape[-1]
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(k), coincidences.shape)
    else:
        below = np.cumsum(margins, axis=-1)
        d = below[..., None, :] - below[..., :, None]
        d = d + (margins[..., :, None] - margins[..., None, :]) / 2.0
        delta = d * d
    observed = (coincidences * delta).sum(axis=(-2, -1))
    expected = (margins[..., :, None] * margins[..., None, :] * delta).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 1e-12, 1.0 - (total - 1.0) * observed / expected, np.nan)


def categorical_alpha(
    values: np.ndarray, level: Literal["nominal", "ordinal"], resamples: int, seed: int
) -> tuple[float, np.ndarray]:
    """Observed alpha and its unit-bootstrap replicates from per-unit coincidences."""
    categories = np.unique(values[~np.isnan(values)])
    k = len(categories)
    index = np.searchsorted(categories, np.where(np.isnan(values), categories[0], values))
    per_unit = np.zeros((len(values), k))
    rows = np.broadcast_to(np.arange(len(values))[:, None], values.shape)
    np.add.at(per_unit, (rows[~np.isnan(values)], index[~np.isnan(values)]), 1.0)
    pairs = per_unit[:, :, None] * per_unit[:, None, :] - np.einsum(
        "uk,kl->ukl", per_unit, np.eye(k)
    )
    pairs /= (per_unit.sum(axis=1) - 1.0)[:, None, None]
    flat = pairs.reshape(len(values), k * k)
    observed = float(_alpha_from_coincidences(flat.sum(axis=0).reshape(k, k), level))
    drawn = [
        _alpha_from_coincidences((counts @ flat).reshape(-1, k, k), level)
        for counts in unit_counts(len(values), resamples, seed)
    ]
    return observed, np.concatenate(drawn) if drawn else np.empty(0)


def interval_alpha(values: np.ndarray, resamples: int, seed: int) -> tuple[float, np.ndarray]:
    """Interval alpha from per-unit sums (any number of distinct values): with m values
    per unit, sum(o * delta) = sum_u (2 m S2 - 2 S1^2) / (m - 1) and the expected
    disagreement's sum is 2 n S2 - 2 S1^2 over all pairable values."""
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    m = present.sum(axis=1).astype(np.float64)
    s1, s2 = filled.sum(axis=1), (filled * filled).sum(axis=1)
    within = (2.0 * m * s2 - 2.0 * s1 * s1) / (m - 1.0)
    parts = np.stack([m, s1, s2, within], axis=1)

    def alpha(sums: np.ndarray) -> np.ndarray:
        n, t1, t2, d = sums[..., 0], sums[..., 1], sums[..., 2], sums[..., 3]
        expected = 2.0 * n * t2 - 2.0 * t1 * t1
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.maximum(np.abs(2.0 * n * t2), 1.0)
            return np.where(expected > 1e-12 * scale, 1.0 - (n - 1.0) * d / expected, np.nan)

    observed = float(alpha(parts.sum(axis=0)))
    drawn = [alpha(counts @ parts) for counts in unit_counts(len(values), resamples, seed)]
    return observed, np.concatenate(drawn) if drawn else np.empty(0)
