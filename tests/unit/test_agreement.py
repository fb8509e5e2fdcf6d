"""Judge-human agreement against independent references (scikit-learn's kappa, balanced
accuracy, F1 and confusion matrix, scipy's Spearman, the ``krippendorff`` package), its
bootstrap intervals against plain resampling, and the invariants a reader relies on."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as hs
from sklearn.metrics import (
    balanced_accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
)

from ragmeter.errors import ConfigError
from ragmeter.reports.agreement import (
    Agreement,
    judge_agreement,
    majority,
    reviewers_alpha,
)
from ragmeter.reports.stats import SMALL_SAMPLE, unit_counts


def _value(found: Agreement, name: str) -> float | None:
    statistic = found.statistic(name)
    assert statistic is not None, name
    return statistic.value


def _noisy_binary(seed: int, n: int, flip: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = (rng.random(n) < 0.6).astype(float)
    judge = np.where(rng.random(n) < flip, 1.0 - human, human)
    return judge, human


@pytest.mark.parametrize(("seed", "n", "flip"), [(1, 40, 0.1), (2, 300, 0.3), (3, 1000, 0.5)])
def test_binary_matches_scikit_learn(seed: int, n: int, flip: float) -> None:
    judge, human = _noisy_binary(seed, n, flip)
    found = judge_agreement(judge, human, kind="binary", resamples=200)
    assert found.n == n and found.kind == "binary"
    assert [s.name for s in found.statistics] == [
        "cohen_kappa",
        "balanced_accuracy",
        "f1",
        "accuracy",
    ]
    assert _value(found, "cohen_kappa") == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert _value(found, "balanced_accuracy") == pytest.approx(
        balanced_accuracy_score(human, judge), abs=1e-12
    )
    assert _value(found, "f1") == pytest.approx(f1_score(human, judge, pos_label=0), abs=1e-12)
    assert _value(found, "accuracy") == pytest.approx(float(np.mean(judge == human)), abs=1e-12)
    assert found.confusion is not None and found.confusion.categories == (0.0, 1.0)
    # scikit-learn's rows are its first argument: the judge's
    expected = confusion_matrix(judge, human, labels=[0.0, 1.0]).tolist()
    assert [list(row) for row in found.confusion.counts] == expected


def test_threshold_binarises_both_sides_and_is_required_off_0_1() -> None:
    rng = np.random.default_rng(4)
    human = rng.random(200)
    judge = np.clip(human + rng.normal(0, 0.2, 200), 0, 1)
    found = judge_agreement(judge, human, kind="binary", threshold=0.7, resamples=100)
    hb, jb = (human >= 0.7).astype(float), (judge >= 0.7).astype(float)
    assert _value(found, "cohen_kappa") == pytest.approx(cohen_kappa_score(hb, jb), abs=1e-12)
    with pytest.raises(ConfigError, match="threshold"):
        judge_agreement(judge, human, kind="binary")


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_ordinal_matches_scikit_learn_and_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 6, 250).astype(float)
    judge = np.clip(human + rng.integers(-2, 3, 250), 0, 5)
    found = judge_agreement(
        judge, human, kind="ordinal", categories=[0, 1, 2, 3, 4, 5], resamples=200
    )
    assert [s.name for s in found.statistics] == ["weighted_kappa", "spearman", "accuracy"]
    reference = cohen_kappa_score(human, judge, weights="quadratic", labels=list(range(6)))
    assert _value(found, "weighted_kappa") == pytest.approx(reference, abs=1e-12)
    assert _value(found, "spearman") == pytest.approx(st.spearmanr(judge, human).statistic)
    assert _value(found, "accuracy") == pytest.approx(float(np.mean(judge == human)))
    assert found.confusion is not None
    expected = confusion_matrix(judge, human, labels=list(range(6))).tolist()
    assert [list(row) for row in found.confusion.counts] == expected


def test_ordinal_categories_fix_the_scale_and_reject_values_outside() -> None:
    human = np.array([1.0, 2.0, 3.0, 2.0, 1.0, 3.0])
    judge = np.array([1.0, 2.0, 2.0, 3.0, 1.0, 3.0])
    wide = judge_agreement(judge, human, kind="ordinal", categories=[0, 1, 2, 3, 4, 5])
    reference = cohen_kappa_score(human, judge, weights="quadratic", labels=list(range(6)))
    assert _value(wide, "weighted_kappa") == pytest.approx(reference)
    assert wide.confusion is not None and len(wide.confusion.categories) == 6
    with pytest.raises(ConfigError, match="categories"):
        judge_agreement(judge, human, kind="ordinal", categories=[1, 2])


def test_continuous_gives_spearman_and_binary_statistics_with_a_threshold() -> None:
    rng = np.random.default_rng(8)
    human = rng.random(400)
    judge = human + rng.normal(0, 0.3, 400)
    alone = judge_agreement(judge, human, kind="continuous", resamples=100)
    assert [s.name for s in alone.statistics] == ["spearman"] and alone.confusion is None
    assert _value(alone, "spearman") == pytest.approx(st.spearmanr(judge, human).statistic)
    both = judge_agreement(judge, human, kind="continuous", threshold=0.5, resamples=100)
    names = [s.name for s in both.statistics]
    assert names == ["spearman", "cohen_kappa", "balanced_accuracy", "f1", "accuracy"]
    hb, jb = (human >= 0.5).astype(float), (judge >= 0.5).astype(float)
    assert _value(both, "f1") == pytest.approx(f1_score(hb, jb, pos_label=0))


def test_missing_values_are_dropped_and_n_counts_what_is_used() -> None:
    judge = [1, 0, None, 1, float("nan"), 0, 1, 1]
    human = [1, 1, 0, None, 1, 0, 1, 0]
    found = judge_agreement(judge, human, kind="binary", resamples=50)
    kept_j, kept_h = [1, 0, 0, 1, 1], [1, 1, 0, 1, 0]
    assert found.n == 5 and all(s.n == 5 for s in found.statistics)
    assert _value(found, "cohen_kappa") == pytest.approx(cohen_kappa_score(kept_h, kept_j))
    with pytest.raises(ConfigError, match="judge values"):
        judge_agreement([1, 0], [1], kind="binary")


def test_undefined_statistics_are_none_with_a_note_saying_why() -> None:
    ones = np.ones(50)
    found = judge_agreement(ones, ones, kind="binary", resamples=50)
    kappa = found.statistic("cohen_kappa")
    assert kappa is not None and kappa.value is None and kappa.low is None
    assert kappa.note is not None and kappa.note.code == "agreement_one_class"
    f1 = found.statistic("f1")
    assert f1 is not None and f1.value is None and f1.note is not None
    assert f1.note.code == "agreement_no_failures"
    assert _value(found, "accuracy") == 1.0
    flat = judge_agreement(np.full(40, 0.5), np.linspace(0, 1, 40), kind="continuous")
    rho = flat.statistic("spearman")
    assert rho is not None and rho.value is None and rho.note is not None
    assert rho.note.code == "agreement_constant"
    empty = judge_agreement([None, 1.0], [0.0, None], kind="binary")
    assert empty.n == 0 and all(s.value is None for s in empty.statistics)


def test_small_samples_are_flagged_and_large_ones_not() -> None:
    judge, human = _noisy_binary(9, SMALL_SAMPLE - 1, 0.2)
    small = judge_agreement(judge, human, kind="binary", resamples=50)
    for statistic in small.statistics:
        assert statistic.note is not None and statistic.note.code == "small_sample"
        assert statistic.note.values == {"n": SMALL_SAMPLE - 1, "min": SMALL_SAMPLE}
    judge, human = _noisy_binary(9, SMALL_SAMPLE, 0.2)
    assert all(s.note is None for s in judge_agreement(judge, human, kind="binary").statistics)


def test_as_dict_is_json_ready() -> None:
    import json

    judge, human = _noisy_binary(10, 20, 0.2)
    found = judge_agreement(judge, human, kind="binary", against="alice", resamples=50)
    data = json.loads(json.dumps(found.as_dict()))
    assert data["against"] == "alice" and data["n"] == 20
    assert data["statistics"][0]["note"]["code"] == "small_sample"
    assert data["confusion"]["rows"] == "judge"


def test_kappa_interval_agrees_with_resampling_the_units() -> None:
    judge, human = _noisy_binary(11, 300, 0.25)
    found = judge_agreement(judge, human, kind="binary", resamples=4000, seed=3)
    rng = np.random.default_rng(12)
    picks = rng.integers(0, 300, size=(4000, 300))
    naive = [cohen_kappa_score(human[p], judge[p]) for p in picks]
    low, high = np.quantile(naive, [0.025, 0.975])
    kappa = found.statistic("cohen_kappa")
    assert kappa is not None and kappa.low is not None and kappa.high is not None
    assert kappa.low == pytest.approx(low, abs=0.015)
    assert kappa.high == pytest.approx(high, abs=0.015)


def test_spearman_interval_is_exactly_scipy_over_the_same_resamples() -> None:
    rng = np.random.default_rng(13)
    human = rng.integers(0, 4, 60).astype(float)  # ties: average ranks matter
    judge = np.round(human + rng.normal(0, 1, 60))
    found = judge_agreement(judge, human, kind="continuous", resamples=300, seed=5)
    replicates = [
        st.spearmanr(np.repeat(judge, c.astype(int)), np.repeat(human, c.astype(int))).statistic
        for chunk in unit_counts(60, 300, 5)
        for c in chunk
    ]
    rho = found.statistic("spearman")
    assert rho is not None
    assert (rho.low, rho.high) == pytest.approx(tuple(np.quantile(replicates, [0.025, 0.975])))


def _matrix(seed: int, units: int, raters: int, values: int, missing: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, values, units)
    matrix = np.clip(truth[:, None] + rng.integers(-1, 2, (units, raters)), 0, values - 1)
    out = matrix.astype(float)
    out[rng.random((units, raters)) < missing] = np.nan
    return out


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize(("seed", "raters", "missing"), [(1, 2, 0.0), (2, 3, 0.3), (3, 5, 0.5)])
def test_alpha_matches_the_krippendorff_package(
    level: str, seed: int, raters: int, missing: float
) -> None:
    matrix = _matrix(seed, 80, raters, 5, missing)
    found = reviewers_alpha(matrix, level=level, resamples=100)  # type: ignore[arg-type]
    reference = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement=level)
    assert found.value == pytest.approx(reference, abs=1e-10)
    assert found.n == int(((~np.isnan(matrix)).sum(axis=1) >= 2).sum())


def test_alpha_interval_of_continuous_values_is_the_package_over_the_same_resamples() -> None:
    rng = np.random.default_rng(14)
    truth = rng.random(40)
    matrix = truth[:, None] + rng.normal(0, 0.2, (40, 3))
    found = reviewers_alpha(matrix, level="interval", resamples=200, seed=2)
    assert found.value == pytest.approx(
        krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="interval")
    )
    replicates = [
        krippendorff.alpha(
            reliability_data=np.repeat(matrix, c.astype(int), axis=0).T,
            level_of_measurement="interval",
        )
        for chunk in unit_counts(40, 200, 2)
        for c in chunk
    ]
    assert (found.low, found.high) == pytest.approx(tuple(np.quantile(replicates, [0.025, 0.975])))


def test_alpha_undefined_and_unpairable() -> None:
    same = np.full((10, 3), 2.0)
    found = reviewers_alpha(same, level="nominal")
    assert found.value is None and found.note is not None
    assert found.note.code == "agreement_one_value"
    lonely = np.array([[1.0, np.nan], [np.nan, 0.0]])
    none = reviewers_alpha(lonely, level="nominal")
    assert none.n == 0 and none.value is None


def test_majority_vote_median_and_mean() -> None:
    nan = np.nan
    binary = np.array([[1, 1, 0], [0, 1, nan], [0, 0, nan], [nan, nan, nan]])
    np.testing.assert_array_equal(majority(binary, kind="binary"), [1.0, nan, 0.0, nan])
    scores = np.array([[0.9, 0.8, 0.2], [0.1, 0.6, nan]])
    assert majority(scores, kind="binary", threshold=0.5).tolist()[0] == 1.0
    assert np.isnan(majority(scores, kind="binary", threshold=0.5)[1])
    grades = np.array([[3, 4, 5], [3, 3, nan], [2, 4, nan], [1, nan, nan]])
    found = majority(grades, kind="ordinal")
    assert found[0] == 4 and found[1] == 3 and np.isnan(found[2]) and found[3] == 1
    assert majority(scores, kind="continuous") == pytest.approx([1.9 / 3, 0.35])


# --- invariants -----------------------------------------------------------------------------

_labels = hs.lists(hs.integers(0, 1), min_size=2, max_size=60)
_grades = hs.lists(hs.tuples(hs.integers(0, 5), hs.integers(0, 5)), min_size=2, max_size=60)


@settings(max_examples=60, deadline=None)
@given(_labels)
def test_identical_labels_agree_perfectly(labels: list[int]) -> None:
    found = judge_agreement(labels, labels, kind="binary", resamples=20)
    assert _value(found, "accuracy") == 1.0
    if len(set(labels)) == 2:
        assert _value(found, "cohen_kappa") == pytest.approx(1.0)
        assert _value(found, "balanced_accuracy") == pytest.approx(1.0)
    grades = judge_agreement(labels, labels, kind="ordinal", categories=[0, 1, 2], resamples=20)
    if len(set(labels)) == 2:
        assert _value(grades, "weighted_kappa") == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(_grades)
def test_kappas_and_rho_are_symmetric_and_in_range(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs], dtype=float)
    b = np.array([p[1] for p in pairs], dtype=float)
    scale = list(range(6))
    ab = judge_agreement(a, b, kind="ordinal", categories=scale, resamples=20)
    ba = judge_agreement(b, a, kind="ordinal", categories=scale, resamples=20)
    for name in ("weighted_kappa", "spearman", "accuracy"):
        x, y = _value(ab, name), _value(ba, name)
        assert (x is None) == (y is None)
        if x is not None and y is not None:
            assert x == pytest.approx(y, abs=1e-12)
            assert -1.0 - 1e-12 <= x <= 1.0 + 1e-12
    for statistic in ab.statistics:
        if statistic.low is not None and statistic.high is not None:
            assert statistic.low <= statistic.high


@settings(max_examples=60, deadline=None)
@given(_grades, hs.randoms(use_true_random=False))
def test_unit_order_does_not_change_the_values(pairs: list[tuple[int, int]], order) -> None:  # type: ignore[no-untyped-def]
    shuffled = list(pairs)
    order.shuffle(shuffled)
    for kind, threshold in (("binary", 3), ("ordinal", None)):
        one = judge_agreement(
            *zip(*pairs, strict=True), kind=kind, threshold=threshold, resamples=20
        )
        two = judge_agreement(
            *zip(*shuffled, strict=True), kind=kind, threshold=threshold, resamples=20
        )
        for s, t in zip(one.statistics, two.statistics, strict=True):
            assert (s.value is None) == (t.value is None)
            assert s.value is None or s.value == pytest.approx(t.value, abs=1e-12)
        assert one.confusion == two.confusion


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(0, 3)), min_size=2, max_size=50))
def test_alpha_of_two_raters_is_scotts_pi_corrected_for_sample_size(
    pairs: list[tuple[int, int]],
) -> None:
    """With two raters and no gaps, alpha = 1 - (2n - 1) / (2n) * (1 - pi), pi being
    Scott's pi (kappa with pooled margins): below 1 unless the raters agree everywhere."""
    matrix = np.array(pairs, dtype=float)
    n = len(matrix)
    found = reviewers_alpha(matrix, level="nominal", resamples=20)
    pooled = np.bincount(matrix.ravel().astype(int), minlength=4) / (2 * n)
    chance = float((pooled**2).sum())
    if chance == 1.0:
        assert found.value is None
        return
    pi = 1.0 - (1.0 - float(np.mean(matrix[:, 0] == matrix[:, 1]))) / (1.0 - chance)
    assert found.value == pytest.approx(1.0 - (2 * n - 1) / (2 * n) * (1.0 - pi), abs=1e-12)
    assert found.value <= 1.0 + 1e-12
    assert (found.value == pytest.approx(1.0)) == bool(np.all(matrix[:, 0] == matrix[:, 1]))
