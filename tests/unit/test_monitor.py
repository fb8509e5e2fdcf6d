"""A metric over time and its drift test, against independent references: pandas' time
grouping for the buckets, scipy's two-sample permutation test and two-sample BCa bootstrap
for the drift, statsmodels' Bonferroni for the correction; and the invariants a reader of a
monitor relies on."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs
from statsmodels.stats.multitest import multipletests

from ragmeter.reports.monitor import (
    BUCKETS,
    MAX_BUCKETS,
    NORMAL_FROM,
    bucket_series,
    difference_ci,
    drift,
    permutation_test,
)
from ragmeter.reports.stats import ANALYTIC_FROM, SMALL_SAMPLE, bootstrap_mean_ci, mean_ci

HOUR = BUCKETS["hour"]


def _abs_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.abs(np.mean(x, axis=axis) - np.mean(y, axis=axis))


def _scipy_p(r: np.ndarray, b: np.ndarray, resamples: float = 100_000) -> float:
    """scipy's independent-samples permutation test of |mean difference| (exact when every
    split fits in ``resamples``)."""
    found = st.permutation_test(
        (r, b),
        _abs_difference,
        permutation_type="independent",
        alternative="greater",
        n_resamples=resamples,
        rng=np.random.default_rng(11),
        batch=2_000,
    )
    return float(found.pvalue)


def _scipy_bca(r: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    found = st.bootstrap(
        (r, b),
        lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        method="BCa",
        confidence_level=confidence,
        n_resamples=20_000,
        rng=np.random.default_rng(7),
    ).confidence_interval
    return float(found.low), float(found.high)


# -- buckets -------------------------------------------------------------------------------


def test_buckets_match_pandas_grouping_by_utc_hour_and_day() -> None:
    rng = np.random.default_rng(3)
    start = pd.Timestamp("2026-11-20T22:17:00Z").value
    times = np.sort(start + rng.integers(0, 3 * 86_400 * 10**9, 5_000))
    values = rng.beta(5, 2, len(times))
    values[rng.random(len(times)) < 0.05] = np.nan  # nulls
    frame = pd.DataFrame({"t": pd.to_datetime(times, utc=True), "v": values})
    for bucket, freq in (("hour", "h"), ("day", "D")):
        found = bucket_series(times, values, bucket)  # type: ignore[arg-type]
        grouped = frame.groupby(frame["t"].dt.floor(freq))["v"]
        means, counts, sizes = grouped.mean(), grouped.count(), grouped.size()
        assert [b.start_ns for b in found] == [t.value for t in means.index]
        assert [b.n for b in found] == counts.tolist()
        assert [b.nulls for b in found] == (sizes - counts).tolist()
        assert np.allclose([b.mean for b in found], means.to_numpy(), rtol=0, atol=1e-12)
        assert all(b.start_ns % BUCKETS[bucket] == 0 for b in found)  # on the hour, at 00:00


def test_a_bucket_interval_is_a_run_summary_interval_and_small_ones_are_flagged() -> None:
    rng = np.random.default_rng(4)
    values = rng.random(SMALL_SAMPLE + 10)
    times = np.array([5 * HOUR] * SMALL_SAMPLE + [6 * HOUR] * 10, dtype=np.int64)
    big, small = bucket_series(times, values, "hour")
    assert (big.ci95_low, big.ci95_high) == bootstrap_mean_ci(values[:SMALL_SAMPLE])
    assert not big.small_sample and big.ci_note is None
    assert small.small_sample and small.ci_note and "fewer than 30" in small.ci_note


def test_a_bucket_of_nulls_only_has_no_mean() -> None:
    (only,) = bucket_series(np.array([HOUR, HOUR]), np.array([np.nan, np.nan]), "hour")
    assert only.mean is None and only.n == 0 and only.nulls == 2


def test_too_many_buckets_is_refused_with_the_way_out() -> None:
    times = np.array([0, MAX_BUCKETS * HOUR], dtype=np.int64)
    with pytest.raises(ValueError, match="day buckets"):
        bucket_series(times, np.array([0.5, 0.5]), "hour")
    assert len(bucket_series(times, np.array([0.5, 0.5]), "day")) == 2


# -- the permutation test ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_exact_permutation_equals_scipy_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    r, b = rng.beta(5, 2, 6), rng.beta(4, 3, 7)
    p, method = permutation_test(r, b)
    assert method == "exact"
    assert p == pytest.approx(_scipy_p(r, b, np.inf), abs=1e-12)


def test_exact_permutation_with_ties_hand_worked() -> None:
    """Recent (1, 1) against baseline (0, 0): of the 6 splits of (0, 0, 1, 1) the observed
    one and its mirror reach |difference| 1, so p = 2/6."""
    assert permutation_test(np.array([1.0, 1.0]), np.array([0.0, 0.0])) == (1 / 3, "exact")


@pytest.mark.parametrize(("n_r", "n_b"), [(40, 60), (15, 900), (300, 25)])
def test_sampled_permutation_matches_scipy(n_r: int, n_b: int) -> None:
    rng = np.random.default_rng(n_r)
    r, b = rng.beta(5, 2, n_r), rng.beta(5, 2.4, n_b)
    p, method = permutation_test(r, b)
    assert method == "randomisation"
    reference = _scipy_p(r, b)
    error = 4 * np.sqrt(reference * (1 - reference) / 4_000) + 1e-3  # our 4,000 draws
    assert abs(p - reference) < error


@pytest.mark.parametrize("kind", ["continuous", "binary", "graded"])
def test_normal_route_matches_scipy_from_its_threshold(kind: str) -> None:
    """Shifts chosen so that p is near 0.05, where a verdict turns."""
    rng = np.random.default_rng(5)
    n_r, n_b = NORMAL_FROM, NORMAL_FROM + 300
    if kind == "continuous":
        r, b = rng.beta(5, 2, n_r), rng.beta(5, 2, n_b) - 0.012
    elif kind == "binary":
        r = (rng.random(n_r) < 0.8).astype(float)
        b = (rng.random(n_b) < 0.755).astype(float)
    else:
        r = rng.integers(0, 6, n_r) / 5
        b = np.clip(rng.integers(0, 6, n_b) / 5 - 0.2 * (rng.random(n_b) < 0.3), 0, 1)
    p, method = permutation_test(r, b)
    reference = _scipy_p(r, b)
    assert method == "normal" and 0.005 < reference < 0.2, reference
    assert abs(p - reference) < 0.006


def test_no_difference_has_p_one() -> None:
    assert permutation_test(np.full(50, 0.7), np.full(80, 0.7)) == (1.0, "exact")


@settings(max_examples=60, deadline=None)
@given(
    hs.lists(hs.floats(0, 1), min_size=1, max_size=7),
    hs.lists(hs.floats(0, 1), min_size=1, max_size=7),
)
def test_exact_p_is_a_probability_and_ignores_which_side_is_which(
    r: list[float], b: list[float]
) -> None:
    p, _ = permutation_test(np.array(r), np.array(b))
    q, _ = permutation_test(np.array(b), np.array(r))
    assert 0.0 < p <= 1.0 and p == pytest.approx(q, abs=1e-12)
    shuffled, _ = permutation_test(np.array(r[::-1]), np.array(b[::-1]))
    assert shuffled == p


# -- the interval of the difference ---------------------------------------------------------


@pytest.mark.parametrize(("n_r", "n_b"), [(20, 30), (80, 400)])
def test_difference_interval_matches_scipy_two_sample_bca(n_r: int, n_b: int) -> None:
    rng = np.random.default_rng(n_r)
    r, b = rng.lognormal(0, 1, n_r), rng.lognormal(0, 0.8, n_b)
    low, high = _scipy_bca(r, b)
    width = high - low
    found = difference_ci(r, b, resamples=20_000, seed=3)
    assert found.method == "bca"
    assert abs(found.low - low) < 0.05 * width and abs(found.high - high) < 0.05 * width


def test_the_analytic_interval_matches_scipy_bca_from_its_threshold() -> None:
    rng = np.random.default_rng(2)
    r, b = rng.lognormal(0, 1, ANALYTIC_FROM), rng.lognormal(0, 1, ANALYTIC_FROM + 500)
    low, high = _scipy_bca(r, b)
    found = difference_ci(r, b)
    assert found.method == "abc"
    assert abs(found.low - low) < 0.03 * (high - low) and abs(found.high - high) < 0.03 * (
        high - low
    )


def test_few_values_give_a_percentile_interval_that_says_so() -> None:
    found = difference_ci(np.array([0.2, 0.4, 0.9]), np.array([0.1, 0.5, 0.3, 0.8]))
    assert found.method == "percentile" and found.note and found.note.code == "bca_few"
    flat = difference_ci(np.full(5, 0.5), np.full(9, 0.5))
    assert (flat.low, flat.high) == (0.0, 0.0) and flat.note and flat.note.code == "bca_equal"


@settings(max_examples=40, deadline=None)
@given(
    hs.lists(hs.floats(0, 1), min_size=10, max_size=60),
    hs.lists(hs.floats(0, 1), min_size=10, max_size=60),
)
def test_the_interval_contains_the_difference(r: list[float], b: list[float]) -> None:
    delta = float(np.mean(r)) - float(np.mean(b))
    found = difference_ci(np.array(r), np.array(b), resamples=2_000)
    assert found.low - 1e-9 <= delta <= found.high + 1e-9


def test_values_that_differ_by_tiny_amounts_have_an_interval() -> None:
    """Influences near 1e-150: their sum of squares is a float, its power 1.5 is not (the
    acceleration divided by zero; found by Hypothesis)."""
    recent = np.array([0.0] * 9 + [1e-148])
    found = difference_ci(recent, np.zeros(10), resamples=2_000)
    assert found.low <= 1e-149 <= found.high and math.isfinite(found.high)
    paired = mean_ci(recent, resamples=2_000)  # a comparison's paired differences alike
    assert paired.low <= 1e-149 <= paired.high and math.isfinite(paired.high)
    many = np.zeros(ANALYTIC_FROM)
    many[-1] = 1e-148
    analytic = mean_ci(many)  # the ABC interval, from ANALYTIC_FROM pairs
    assert analytic.method == "abc" and analytic.low <= 1e-151 <= analytic.high


# -- drift across metrics -------------------------------------------------------------------


def test_drift_corrects_p_and_intervals_as_compare_does() -> None:
    rng = np.random.default_rng(8)
    samples = {
        "faithfulness": (rng.beta(5, 2, 300) - 0.15, rng.beta(5, 2, 600)),
        "answer_relevancy": (rng.beta(5, 2, 300), rng.beta(5, 2, 600)),
        "context_recall": (rng.beta(5, 2, 300), rng.beta(5, 2, 600)),
    }
    found = drift(samples)
    raw = [found[name].p_value for name in samples]
    reference = multipletests(raw, method="bonferroni")[1]
    assert [found[name].p_adjusted for name in samples] == pytest.approx(reference)
    assert all(d.ci_level == pytest.approx(1 - 0.05 / 3) for d in found.values())
    assert found["faithfulness"].verdict == "worse" and found["faithfulness"].delta < 0
    assert found["answer_relevancy"].verdict == "no_evidence"


def test_a_metric_without_values_on_a_side_is_left_out_of_the_family() -> None:
    rng = np.random.default_rng(9)
    found = drift({"a": (rng.random(50), rng.random(50)), "b": (np.array([]), rng.random(9))})
    assert list(found) == ["a"] and found["a"].ci_level == pytest.approx(0.95)


def test_small_windows_are_flagged_and_never_called_better_or_worse_by_the_interval() -> None:
    found = drift({"m": (np.array([0.9, 1.0, 0.95]), np.array([0.1, 0.2, 0.15, 0.1]))})["m"]
    assert found.ci_note and found.ci_note.startswith("recent window")
    assert found.p_method == "exact"


def test_false_alarms_on_noise_stay_near_alpha() -> None:
    """No drift at all: over 300 seeded monitors of 2 metrics, the family claims a drift in
    at most ~alpha of them."""
    claims = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        samples = {m: (rng.beta(5, 2, 60), rng.beta(5, 2, 120)) for m in ("a", "b")}
        found = drift(samples, seed=seed)
        claims += any(d.verdict != "no_evidence" for d in found.values())
    assert claims / 300 < 0.08


def test_a_real_drop_is_found() -> None:
    found = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        found += (
            drift({"a": (rng.beta(5, 2, 200) - 0.08, rng.beta(5, 2, 400))})["a"].verdict == "worse"
        )
    assert found >= 36
