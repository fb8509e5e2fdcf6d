"""The comparison statistics against independent references (scipy's BCa bootstrap and
permutation test, statsmodels' Bonferroni), their error rates on seeded simulations, and the
invariants a reader of a comparison relies on."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs
from statsmodels.stats.multitest import multipletests

from ragmeter.reports.stats import (
    ANALYTIC_FROM,
    BCA_MIN_PAIRS,
    SMALL_SAMPLE,
    Interval,
    adjusted,
    bootstrap_mean_ci,
    ci_note,
    compare_paired,
    mean_ci,
    mean_summary,
    sign_flip_test,
    verdict,
)


def _scipy_bca(d: np.ndarray, resamples: int = 20_000) -> tuple[float, float]:
    found = st.bootstrap(
        (d,), np.mean, method="BCa", n_resamples=resamples, rng=np.random.default_rng(7)
    ).confidence_interval
    return float(found.low), float(found.high)


def _scipy_sign_flip(d: np.ndarray, resamples: int = 100_000) -> float:
    """scipy's one-sample "samples" permutation test flips signs; exact when 2^n fits."""
    found = st.permutation_test(
        (d,),
        np.mean,
        permutation_type="samples",
        n_resamples=resamples,
        rng=np.random.default_rng(7),
    )
    return float(found.pvalue)


# -- the confidence interval -------------------------------------------------------------


@pytest.mark.parametrize("n", [15, 60, 400])
def test_bca_matches_scipy(n: int) -> None:
    """Skewed differences, where BCa and percentile differ: with many draws ours is scipy's
    BCa within Monte-Carlo error; with the default draws it stays within its own."""
    d = np.random.default_rng(n).lognormal(0.0, 1.0, n) - 1.0
    low, high = _scipy_bca(d)
    width = high - low
    many = mean_ci(d, resamples=20_000, seed=3)
    assert many.method == "bca"
    assert abs(many.low - low) < 0.04 * width and abs(many.high - high) < 0.04 * width
    default = mean_ci(d)
    assert abs(default.low - low) < 0.12 * width and abs(default.high - high) < 0.12 * width


def test_bca_is_not_the_percentile_interval() -> None:
    """The check above can fail: on this sample the percentile interval is far from BCa."""
    d = np.random.default_rng(15).lognormal(0.0, 1.0, 15)
    low, high = _scipy_bca(d)
    pct = st.bootstrap((d,), np.mean, method="percentile", rng=np.random.default_rng(7))
    assert abs(float(pct.confidence_interval.high) - high) > 0.2 * (high - low)


@pytest.mark.parametrize("shape", ["lognormal", "sparse"])
def test_the_analytic_interval_matches_scipy_bca_from_its_threshold(shape: str) -> None:
    rng = np.random.default_rng(1)
    n = ANALYTIC_FROM
    if shape == "lognormal":
        d = rng.lognormal(0.0, 1.0, n)
    else:  # judged scores: most pairs equal, a few flipped either way
        d = (rng.random(n) < 0.05).astype(float) - (rng.random(n) < 0.02)
    ci = mean_ci(d)
    low, high = _scipy_bca(d)
    assert ci.method == "abc"
    assert abs(ci.low - low) < 0.03 * (high - low) and abs(ci.high - high) < 0.03 * (high - low)


@pytest.mark.parametrize(
    ("d", "note"),
    [
        (np.array([0.5]), "BCa undefined: a single pair"),
        (np.full(50, 0.25), "BCa undefined: all differences are equal"),
        (np.array([0.1, 0.4, -0.2, 0.3, 0.0]), f"fewer than {BCA_MIN_PAIRS} pairs"),
    ],
)
def test_percentile_where_bca_is_undefined_says_so(d: np.ndarray, note: str) -> None:
    ci = mean_ci(d)
    assert ci.method == "percentile"
    assert ci.note is not None and note in ci.note.text and ci.note.code.startswith("bca_")
    assert ci.low <= float(d.mean()) <= ci.high


def test_percentile_fallback_matches_scipy() -> None:
    d = np.array([0.1, 0.4, -0.2, 0.3, 0.0, 0.9])
    ci = mean_ci(d, resamples=20_000)
    ref = st.bootstrap(
        (d,), np.mean, method="percentile", n_resamples=20_000, rng=np.random.default_rng(7)
    ).confidence_interval
    assert ci.low == pytest.approx(ref.low, abs=0.02)
    assert ci.high == pytest.approx(ref.high, abs=0.02)


def test_seeded_the_same_interval_every_time() -> None:
    d = np.random.default_rng(0).normal(0.1, 1.0, 200)
    assert mean_ci(d) == mean_ci(d)
    assert mean_ci(d, seed=1) != mean_ci(d)


# -- the randomisation test --------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_exact_sign_flip_equals_scipy_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = rng.normal(0.3, 1.0, 10)
    d[: seed % 3] = 0.0  # zero differences count for nothing
    p, method = sign_flip_test(d)
    assert method == "exact"
    assert p == pytest.approx(_scipy_sign_flip(d), abs=1e-12)


def test_exact_sign_flip_with_ties_hand_worked() -> None:
    # |T| = 3 from three +1s: patterns reaching |T*| >= 3 are all-plus and all-minus of 8
    p, _ = sign_flip_test(np.array([1.0, 1.0, 1.0, 0.0]))
    assert p == pytest.approx(2 / 8)


def test_sampled_sign_flip_matches_scipy() -> None:
    d = np.random.default_rng(3).normal(0.15, 1.0, 150)
    p, method = sign_flip_test(d)
    assert method == "randomisation"
    reference = _scipy_sign_flip(d)
    assert abs(p - reference) < 4 * np.sqrt(reference * (1 - reference) / 4_000)
    assert 0.01 < reference < 0.5  # a p-value whose estimate the check can get wrong


@pytest.mark.parametrize("wins", [470, 465, 450])
def test_normal_route_matches_the_exact_law_on_binary_scores(wins: int) -> None:
    """At the threshold, 0/1 scores: the sign-flip law is the binomial sign test's."""
    n = ANALYTIC_FROM
    d = np.array([1.0] * wins + [-1.0] * (n - wins))
    p, method = sign_flip_test(d)
    assert method == "normal"
    assert p == pytest.approx(st.binomtest(wins, n).pvalue, abs=0.001)


def test_normal_route_matches_scipy_on_continuous_scores() -> None:
    d = np.random.default_rng(5).normal(0.06, 1.0, ANALYTIC_FROM)
    p, method = sign_flip_test(d)
    reference = _scipy_sign_flip(d, 40_000)
    assert method == "normal"
    assert abs(p - reference) < 4 * np.sqrt(reference * (1 - reference) / 40_000)
    assert 0.01 < reference < 0.2


def test_normal_route_matches_the_exact_law_on_graded_scores() -> None:
    """Differences in thirds: the exact law of sum(s_i * c_i) / 3 by convolving each size's
    binomial, against the normal route with its continuity correction."""
    rng = np.random.default_rng(5)
    sizes = rng.choice([1, 2, 3], ANALYTIC_FROM, p=[0.55, 0.4, 0.05])
    signs = np.where(rng.random(ANALYTIC_FROM) < 0.54, 1, -1)
    d = signs * sizes / 3.0
    law = np.array([1.0])  # over sum(s_i * c_i) + sum(c_i), in steps of 1
    for size in (1, 2, 3):
        count = int((sizes == size).sum())
        spread = np.zeros(2 * size * count + 1)
        spread[:: 2 * size] = st.binom.pmf(np.arange(count + 1), count, 0.5)
        law = np.convolve(law, spread)
    observed = abs(int((signs * sizes).sum()))
    values = np.abs(np.arange(len(law)) - int(sizes.sum()))
    exact = float(law[values >= observed].sum())
    p, method = sign_flip_test(d)
    assert method == "normal"
    assert 0.005 < exact < 0.2
    assert p == pytest.approx(exact, abs=0.001)


def test_no_difference_has_p_one() -> None:
    assert sign_flip_test(np.zeros(30)) == (1.0, "exact")


# -- the correction and the verdict ------------------------------------------------------


def _p_vectors() -> list[list[float]]:
    rng = np.random.default_rng(11)
    found = [rng.random(int(k)).tolist() for k in rng.integers(1, 12, 16)]
    found += [(rng.random(int(k)) ** 4 / 10).tolist() for k in rng.integers(2, 12, 4)]
    return [*found, [0.01, 0.01, 0.04, 0.04], [0.3, 0.9, 1.0], [0.0, 0.5]]


@pytest.mark.parametrize("p", _p_vectors())
def test_bonferroni_matches_statsmodels(p: list[float]) -> None:
    _, reference, _, _ = multipletests(p, method="bonferroni")
    assert adjusted(p, "bonferroni") == pytest.approx(list(reference), abs=1e-12)
    assert adjusted(p, "none") == pytest.approx(p, abs=0)


def _ci(low: float, high: float) -> Interval:
    return Interval(low, high, "bca")


def test_verdict_needs_both_the_adjusted_p_and_the_interval() -> None:
    assert verdict(0.1, _ci(0.02, 0.2), 0.01) == ("better", None)
    assert verdict(-0.1, _ci(-0.2, -0.02), 0.01) == ("worse", None)
    assert verdict(-0.1, _ci(-0.2, 0.01), 0.2) == ("no_evidence", None)
    # the interval and the test disagree: no claim either contradicts, and a note says so
    found, note = verdict(-0.1, _ci(-0.2, 0.01), 0.01)
    assert (
        found == "no_evidence"
        and note is not None
        and "disagree" in note.text
        and note.code == "disagree"
    )
    found, note = verdict(0.1, _ci(0.02, 0.2), 0.2)
    assert (
        found == "no_evidence"
        and note is not None
        and "disagree" in note.text
        and note.code == "disagree"
    )
    assert verdict(-0.1, _ci(-0.2, -0.02), 0.04, alpha=0.01)[0] == "no_evidence"


def test_equivalent_only_with_a_margin_and_an_informative_interval() -> None:
    inside = _ci(-0.01, 0.02)
    assert verdict(0.005, inside, 0.6)[0] == "no_evidence"  # never "same" without a margin
    assert verdict(0.005, inside, 0.6, margin=0.05)[0] == "equivalent"
    assert verdict(0.005, inside, 0.6, margin=0.015)[0] == "no_evidence"  # sticks out
    assert verdict(0.005, inside, 0.6, margin=0.05, informative=False)[0] == "no_evidence"
    # a difference shown beats equivalence: both are true, the difference is the news
    assert verdict(0.015, _ci(0.01, 0.02), 0.001, margin=0.05)[0] == "better"


def test_compare_makes_intervals_at_the_family_level() -> None:
    """With m metrics each interval is made at 1 - alpha/m: wider than the metric's own
    95% interval, and the same as ``mean_ci`` at that level."""
    rng = np.random.default_rng(5)
    ds = {f"m{i}": rng.normal(0.05, 0.3, 200) for i in range(5)}
    family = compare_paired(ds)
    alone = compare_paired(ds, correction="none")
    for name, d in ds.items():
        f, a = family[name], alone[name]
        assert f.ci_level == pytest.approx(0.99) and a.ci_level == pytest.approx(0.95)
        assert f.ci.low < a.ci.low and a.ci.high < f.ci.high
        assert f.p_adjusted == pytest.approx(min(1.0, 5 * f.p_value)) and a.p_adjusted == a.p_value
        sign = 1.0 if d.sum() >= 0 else -1.0
        own = mean_ci(np.sort(sign * d), confidence=0.99, resamples=10_000)
        low, high = (own.low, own.high) if sign > 0 else (-own.high, -own.low)
        assert (f.ci.low, f.ci.high) == pytest.approx((low, high))


def test_the_issue_example_no_longer_contradicts_itself() -> None:
    """A clear shift on 40 pairs among 5 metrics: whatever the verdict, it is better only
    when both the Bonferroni p and the family-wise interval say so."""
    rng = np.random.default_rng(25)
    ds = {f"m{i}": rng.normal(0.19 if i == 0 else 0.0, 0.45, 40) for i in range(5)}
    for found in compare_paired(ds).values():
        excludes = found.ci.low > 0 or found.ci.high < 0
        if found.verdict in ("better", "worse"):
            assert excludes and found.p_adjusted <= 0.05
        elif excludes or found.p_adjusted <= 0.05:
            assert found.verdict_note is not None


def test_small_and_flat_samples_are_flagged() -> None:
    assert ci_note(np.array([0.3333])) == "interval not informative: all 1 values equal"
    assert ci_note(np.ones(24)) == "interval not informative: all 24 values equal"
    few = np.linspace(0, 1, SMALL_SAMPLE - 1)
    assert ci_note(few) == f"interval not informative: {SMALL_SAMPLE - 1} values (fewer than 30)"
    assert ci_note(np.linspace(0, 1, SMALL_SAMPLE)) is None
    one = mean_summary(np.array([0.3333, np.nan]))
    assert (one["count"], one["null"], one["small_sample"]) == (1, 1, True)
    assert one["ci_note"] == "interval not informative: all 1 values equal"
    none = mean_summary(np.array([np.nan]))
    assert none["mean"] is None and none["ci95_low"] is None and none["ci_note"] is None
    many = mean_summary(np.random.default_rng(1).random(100))
    assert many["ci_note"] is None and many["small_sample"] is False


# -- error rates -------------------------------------------------------------------------


def test_false_alarm_rate_on_noise_only_pairs() -> None:
    """400 seeded noise-only comparisons (the same distribution on both sides, half of them
    0/1 judge-like scores): the 5% test, and "CI excludes 0", each fire at most 32 times."""
    rng = np.random.default_rng(2024)
    test_alarms = ci_alarms = 0
    for i in range(400):
        if i % 2:
            base, other = rng.beta(2.0, 5.0, (2, 60))
        else:
            base, other = (rng.random((2, 60)) < 0.7).astype(float)
        d = other - base
        p, _ = sign_flip_test(d, seed=i)
        ci = mean_ci(d, seed=i)
        test_alarms += p <= 0.05
        ci_alarms += not ci.low <= 0.0 <= ci.high
    assert test_alarms <= 32 and ci_alarms <= 32
    assert test_alarms >= 5 and ci_alarms >= 5  # the tests do fire on noise, now and then


def test_power_on_a_known_shift() -> None:
    """A shift of 0.3 sd over 200 pairs is found in at least 90% of 200 simulations."""
    rng = np.random.default_rng(99)
    found = 0
    for i in range(200):
        d = rng.normal(0.3, 1.0, 200)
        p, _ = sign_flip_test(d, seed=i)
        found += p <= 0.05
    assert found >= 180


# -- invariants --------------------------------------------------------------------------

_diffs = hs.lists(
    hs.floats(-1.0, 1.0, allow_nan=False).map(lambda x: round(x, 3)), min_size=1, max_size=60
).map(lambda xs: np.asarray(xs, dtype=np.float64))


@settings(max_examples=60, deadline=None)
@given(_diffs)
def test_ci_contains_the_point_estimate(d: np.ndarray) -> None:
    (found,) = compare_paired({"m": d}).values()
    assert found.ci.low <= found.delta <= found.ci.high


@settings(max_examples=60, deadline=None)
@given(hs.lists(_diffs, min_size=1, max_size=4))
def test_swapping_the_runs_mirrors_every_answer(ds: list[np.ndarray]) -> None:
    forward = compare_paired({f"m{i}": d for i, d in enumerate(ds)})
    backward = compare_paired({f"m{i}": -d for i, d in enumerate(ds)})
    flip = {"better": "worse", "worse": "better", "no_evidence": "no_evidence"}
    for name, a in forward.items():
        b = backward[name]
        assert (b.p_value, b.p_adjusted, b.p_method) == (a.p_value, a.p_adjusted, a.p_method)
        assert b.delta == -a.delta and b.verdict == flip[a.verdict]
        if a.delta != 0.0:  # an exactly-zero mean has no side to mirror from
            assert (b.ci.low, b.ci.high) == (-a.ci.high, -a.ci.low)


def test_a_run_summary_interval_is_the_same_interval() -> None:
    """``bootstrap_mean_ci`` (run and report summaries) is ``mean_ci`` as a pair."""
    values = np.random.default_rng(4).beta(2.0, 5.0, 300)
    found = mean_ci(values, resamples=1000)
    assert bootstrap_mean_ci(values) == (found.low, found.high)
    assert found.method == "bca"
    many = np.random.default_rng(4).beta(2.0, 5.0, 100_000)  # the analytic route
    low, high = bootstrap_mean_ci(many)
    assert low < float(many.mean()) < high
    assert np.isnan(bootstrap_mean_ci(np.array([]))).all()


def test_a_spread_too_small_to_square_falls_back_to_percentile() -> None:
    d = np.array([0.0, 1e-200] * 10)
    ci = mean_ci(d)
    assert ci.method == "percentile" and ci.note is not None
    assert (ci.note.code, ci.note.text) == ("bca_jackknife", "BCa undefined: degenerate jackknife")
    assert ci.low <= float(d.mean()) <= ci.high
