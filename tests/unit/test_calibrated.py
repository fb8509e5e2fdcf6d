"""The PPI++ corrected mean against the ``ppi_py`` reference (Angelopoulos et al.'s own
package) where the settings match, its inclusion-weighted form, and its notes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from ragmeter.errors import ConfigError
from ragmeter.reports.calibrated import calibrated_mean
from ragmeter.reports.stats import SMALL_SAMPLE


def _run(
    seed: int, rows: int, labels: int, slope: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Judge scores of ``rows`` rows and human values of ``labels`` random ones: the
    judge is ``slope`` x truth + 0.15 + noise, so the optimal lam is near 1 / slope."""
    rng = np.random.default_rng(seed)
    truth = rng.random(rows)
    judge = slope * truth + 0.15 + rng.normal(0, 0.1, rows)
    picked = rng.choice(rows, labels, replace=False)
    return judge, picked, truth[picked]


def _unlabelled(judge: np.ndarray, picked: np.ndarray) -> np.ndarray:
    rest = np.ones(len(judge), dtype=bool)
    rest[picked] = False
    return judge[rest]


@pytest.mark.parametrize(
    ("seed", "rows", "labels", "slope"),
    [(1, 3000, 150, 1.3), (2, 500, 60, 2.0), (3, 10_000, 40, 1.1)],
)
def test_matches_ppi_py_with_its_estimated_lambda(
    seed: int, rows: int, labels: int, slope: float
) -> None:
    judge, picked, human = _run(seed, rows, labels, slope)
    found = calibrated_mean(judge, picked, human, confidence=0.95)
    assert 0.0 < found.lam < 1.0  # the settings where ppi_py's clipping and ours agree
    rest = _unlabelled(judge, picked)
    assert found.value == pytest.approx(
        float(ppi_mean_pointestimate(human, judge[picked], rest)[0])
    )
    low, high = ppi_mean_ci(human, judge[picked], rest, alpha=0.05)
    assert (found.low, found.high) == pytest.approx((float(low[0]), float(high[0])))
    assert (found.n_labelled, found.n_rows) == (labels, rows)
    assert found.judge_mean == pytest.approx(float(judge.mean()))
    assert found.labels_mean == pytest.approx(float(human.mean()))


@pytest.mark.parametrize("lam", [0.0, 0.4, 1.0])
def test_fixed_lambda_is_ppi_py_with_the_disjoint_sets_lambda(lam: float) -> None:
    """lam on all N rows is lam * (N - n) / N on the unlabelled rows alone."""
    judge, picked, human = _run(4, 2000, 100, 1.0)
    found = calibrated_mean(judge, picked, human, lam=lam)
    rest = _unlabelled(judge, picked)
    mu = lam * len(rest) / len(judge)
    low, high = ppi_mean_ci(human, judge[picked], rest, alpha=0.05, lam=mu)
    assert (found.low, found.high) == pytest.approx((float(low[0]), float(high[0])))
    assert found.value == pytest.approx(lam * judge.mean() + (human - lam * judge[picked]).mean())
    if lam == 0.0:
        assert found.value == pytest.approx(human.mean())


def test_lambda_is_clipped_to_one_where_the_slope_exceeds_it() -> None:
    judge, picked, human = _run(5, 2000, 200, 0.5)  # judge compresses the scale: slope ~2
    found = calibrated_mean(judge, picked, human)
    assert found.lam == 1.0
    plain = calibrated_mean(judge, picked, human, lam=1.0)
    assert (found.value, found.low, found.high) == (plain.value, plain.low, plain.high)
    assert found.value == pytest.approx(judge.mean() + (human - judge[picked]).mean())


def test_an_unrelated_judge_gets_lambda_zero_and_the_labels_interval() -> None:
    rng = np.random.default_rng(6)
    judge = rng.random(1000)
    picked = rng.choice(1000, 100, replace=False)
    human = 1.0 - judge[picked] + rng.normal(0, 0.01, 100)  # anti-correlated: slope < 0
    found = calibrated_mean(judge, picked, human)
    assert found.lam == 0.0 and found.value == pytest.approx(human.mean())
    half = 1.959963984540054 * human.std() / np.sqrt(100)
    assert (found.low, found.high) == pytest.approx((human.mean() - half, human.mean() + half))


def test_uniform_inclusion_gives_the_same_estimate_and_a_close_interval() -> None:
    judge, picked, human = _run(7, 4000, 200, 1.0)
    plain = calibrated_mean(judge, picked, human)
    weighted = calibrated_mean(judge, picked, human, inclusion=np.full(200, 200 / 4000))
    assert weighted.weighted and not plain.weighted
    assert weighted.value == pytest.approx(plain.value)
    assert weighted.lam == pytest.approx(plain.lam)
    assert plain.high is not None and plain.low is not None
    assert weighted.high is not None and weighted.low is not None
    width, weighted_width = plain.high - plain.low, weighted.high - weighted.low
    assert weighted_width == pytest.approx(width, rel=0.05)
    assert weighted_width >= width * 0.999  # the weighted route is the conservative one


def test_inclusion_weights_undo_an_oversampled_stratum() -> None:
    """Labels taken 3 to 1 from the low half of the scores: weighting by 1/pi brings the
    labels' mean back to the rows' (the Hajek mean), ignoring pi does not."""
    rng = np.random.default_rng(8)
    truth = rng.random(4000)
    judge = truth + 0.1 + rng.normal(0, 0.05, 4000)
    low = np.flatnonzero(judge < np.median(judge))
    high = np.flatnonzero(judge >= np.median(judge))
    picked = np.concatenate(
        [rng.choice(low, 300, replace=False), rng.choice(high, 100, replace=False)]
    )
    pi = np.concatenate([np.full(300, 300 / len(low)), np.full(100, 100 / len(high))])
    found = calibrated_mean(judge, picked, truth[picked], inclusion=pi)
    assert found.labels_mean == pytest.approx(truth.mean(), abs=0.03)
    assert abs(float(truth[picked].mean()) - truth.mean()) > 0.1
    assert found.low is not None and found.high is not None
    assert found.low <= truth.mean() <= found.high


def test_unscored_labelled_rows_are_dropped_and_counted() -> None:
    judge, picked, human = _run(9, 1000, 50, 1.0)
    judge[picked[:5]] = np.nan
    judge[np.flatnonzero(~np.isin(np.arange(1000), picked))[:10]] = np.nan
    human = human.copy()
    human[5] = np.nan  # not a label
    found = calibrated_mean(judge, picked, human)
    assert found.dropped == 5 and found.n_labelled == 44
    assert found.n_rows == 1000 - 15
    assert found.judge_mean == pytest.approx(float(np.nanmean(judge)))
    assert found.note is not None and found.note.code == "calibrated_dropped"
    assert found.note.values == {"dropped": 5}


def test_few_labels_are_flagged_and_none_give_no_value() -> None:
    judge, picked, human = _run(10, 500, SMALL_SAMPLE - 1, 1.0)
    few = calibrated_mean(judge, picked, human)
    assert few.value is not None and few.note is not None
    assert few.note.code == "calibrated_few_labels"
    assert few.note.values["n"] == SMALL_SAMPLE - 1
    enough = calibrated_mean(*_run(10, 500, SMALL_SAMPLE, 1.0))
    assert enough.note is None
    one = calibrated_mean(judge, picked[:1], human[:1])
    assert one.value is not None and one.low is None and one.note is not None
    assert one.note.code == "calibrated_one_label"
    none = calibrated_mean(judge, np.array([], dtype=int), np.array([]))
    assert none.value is None and none.judge_mean == pytest.approx(judge.mean())
    assert none.note is not None and none.note.code == "calibrated_no_labels"
    data = json.loads(json.dumps(few.as_dict()))
    assert (
        data["note"]["code"] == "calibrated_few_labels" and data["n_labelled"] == SMALL_SAMPLE - 1
    )


def test_bad_input_is_a_config_error() -> None:
    judge = np.linspace(0, 1, 10)
    with pytest.raises(ConfigError, match="2 labelled rows but 1"):
        calibrated_mean(judge, np.array([1, 2]), np.array([0.5]))
    with pytest.raises(ConfigError, match="outside"):
        calibrated_mean(judge, np.array([10]), np.array([0.5]))
    with pytest.raises(ConfigError, match="twice"):
        calibrated_mean(judge, np.array([1, 1]), np.array([0.5, 0.5]))
    with pytest.raises(ConfigError, match="inclusion"):
        calibrated_mean(judge, np.array([1]), np.array([0.5]), inclusion=np.array([0.0]))
    with pytest.raises(ConfigError, match="indices"):
        calibrated_mean(judge, np.array([0.5]), np.array([0.5]))
