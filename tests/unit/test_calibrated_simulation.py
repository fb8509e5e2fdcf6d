"""The corrected mean on synthetic judges of known bias and noise: 5,000 rows, 200 labels
picked at random, 1,000 seeded repetitions. A valid 95% interval covers the true mean in
about 95% of them; the judge's own interval, blind to its bias, covers it almost never;
PPI's interval is narrower than the labels-only one (it also uses the judge's scores)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from ragmeter.reports.calibrated import calibrated_mean

ROWS, LABELS, REPETITIONS = 5_000, 200, 1_000
Z95 = 1.959963984540054

#: (true mean, sampler of (humans, judge) arrays of shape (repetitions, rows))
Scenario = tuple[float, Callable[[np.random.Generator, float], tuple[np.ndarray, np.ndarray]]]


def _pass_fail(rng: np.random.Generator, bias: float) -> tuple[np.ndarray, np.ndarray]:
    """Humans pass 70% of rows; the judge fails 5% of the passes and passes a share of
    the failures that makes its mean exceed the humans' by ``bias``."""
    human = (rng.random((REPETITIONS, ROWS)) < 0.7).astype(float)
    lenient = (bias + 0.7 * 0.05) / 0.3
    says_pass = np.where(
        human == 1.0, rng.random(human.shape) >= 0.05, rng.random(human.shape) < lenient
    )
    return human, says_pass.astype(float)


def _graded(rng: np.random.Generator, bias: float) -> tuple[np.ndarray, np.ndarray]:
    """Humans' 0-1 scores ~ Beta(4, 2) (mean 2/3); the judge adds ``bias`` and N(0, 0.1)."""
    human = rng.beta(4.0, 2.0, (REPETITIONS, ROWS))
    return human, human + bias + rng.normal(0.0, 0.1, human.shape)


SCENARIOS: dict[str, Scenario] = {"pass_fail": (0.7, _pass_fail), "graded": (2.0 / 3.0, _graded)}


def _normal_ci(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per repetition (row), the normal 95% interval of the mean of ``values``."""
    half = Z95 * values.std(axis=1, ddof=1) / np.sqrt(values.shape[1])
    centre = values.mean(axis=1)
    return centre - half, centre + half


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_ppi_covers_the_true_mean_and_the_biased_judge_does_not(scenario: str) -> None:
    truth, sample = SCENARIOS[scenario]
    rng = np.random.default_rng(2023)
    human, judge = sample(rng, 0.1)
    # 200 distinct random rows per repetition: the first 200 of a random permutation
    picked = np.argsort(rng.random((REPETITIONS, ROWS)), axis=1)[:, :LABELS]
    labels = np.take_along_axis(human, picked, axis=1)
    found = [calibrated_mean(judge[r], picked[r], labels[r]) for r in range(REPETITIONS)]
    low = np.array([c.low for c in found], dtype=float)
    high = np.array([c.high for c in found], dtype=float)
    ppi_coverage = float(np.mean((low <= truth) & (truth <= high)))
    judge_low, judge_high = _normal_ci(judge)
    judge_coverage = float(np.mean((judge_low <= truth) & (truth <= judge_high)))
    labels_low, labels_high = _normal_ci(labels)
    labels_coverage = float(np.mean((labels_low <= truth) & (truth <= labels_high)))
    assert ppi_coverage >= 0.93, ppi_coverage
    assert judge_coverage < 0.50, judge_coverage
    # the baseline PPI must beat is valid (Wald's interval of a proportion runs a bit low)
    assert labels_coverage >= 0.92, labels_coverage
    ppi_width, labels_width = float(np.mean(high - low)), float(np.mean(labels_high - labels_low))
    assert ppi_width < labels_width, (ppi_width, labels_width)
    # the point estimate is unbiased: its mean error is within 3 standard errors of 0
    errors = np.array([c.value for c in found], dtype=float) - truth
    assert abs(errors.mean()) < 3.0 * errors.std(ddof=1) / np.sqrt(REPETITIONS)


def test_an_unbiased_judge_is_covered_by_its_own_interval() -> None:
    """The control: without bias the judge-only interval is valid, so the undercoverage
    above comes from the bias, not from how the interval is made."""
    truth, sample = SCENARIOS["graded"]
    _, judge = sample(np.random.default_rng(7), 0.0)
    low, high = _normal_ci(judge)
    assert float(np.mean((low <= truth) & (truth <= high))) >= 0.93


def test_inclusion_probabilities_keep_a_stratified_sample_valid() -> None:
    """A queue that takes half its labels from the lowest-scored fifth of the rows (where
    this judge, lenient elsewhere, is harsh): weighted by 1 / pi the interval still
    covers; taken as a random sample, the labels misstate the judge's error and the
    interval misses."""
    truth, repetitions = 2.0 / 3.0, 500
    rng = np.random.default_rng(11)
    human = rng.beta(4.0, 2.0, (repetitions, ROWS))
    judge = human + 0.1 - 0.3 * (human < 0.4) + rng.normal(0.0, 0.1, human.shape)
    covered = {"weighted": 0, "ignored": 0}
    for r in range(repetitions):
        cut = np.quantile(judge[r], 0.2)
        low, rest = np.flatnonzero(judge[r] < cut), np.flatnonzero(judge[r] >= cut)
        picked = np.concatenate(
            [rng.choice(low, 100, replace=False), rng.choice(rest, 100, replace=False)]
        )
        pi = np.where(np.isin(picked, low), 100 / len(low), 100 / len(rest))
        for route, inclusion in (("weighted", pi), ("ignored", None)):
            found = calibrated_mean(judge[r], picked, human[r, picked], inclusion=inclusion)
            assert found.low is not None and found.high is not None
            covered[route] += int(found.low <= truth <= found.high)
    assert covered["weighted"] / repetitions >= 0.93, covered
    assert covered["ignored"] / repetitions < 0.50, covered
