"""Review sampling rules over made-up results: how many rows each reviewer gets, k different
reviewers per row, nobody given a row twice, the same seed the same sample, inclusion
probabilities whose inverses add up to the rows the rule could pick, and bad options named."""

from __future__ import annotations

from collections import Counter

import pytest

from ragmeter.errors import ConfigError, LimitError
from ragmeter.runs.review.sampling import (
    MAX_COUNT,
    MAX_K,
    MAX_REVIEWERS,
    RULES,
    Candidate,
    ReviewOptions,
    Sample,
    draw,
    pass_threshold,
)

REVIEWERS = ("ann", "bob", "cai")


def _rows(n: int = 200, repeats: bool = True) -> list[Candidate]:
    """Scores spread over 0-1 (every 7th null); passing from 0.5; every 3rd row's repeats
    disagree."""
    out = []
    for i in range(n):
        score = None if i % 7 == 0 else (i * 37 % 100) / 100
        passing = None if score is None else score >= 0.5
        again = (score, score) if i % 3 else (score, None if score is None else 1 - score)
        out.append(Candidate(i, score, passing, again if repeats else ()))
    return out


def _sample(rule: str, count: int = 12, k: int = 2, seed: int = 7, **more: object) -> Sample:
    return draw(_rows(), ReviewOptions(rule, count, REVIEWERS, k, seed, **more))  # type: ignore[arg-type]


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_gives_count_rows_to_each_reviewer_each_row_to_k_of_them(rule: str) -> None:
    sample = _sample(rule)
    per_reviewer = Counter(a.reviewer for a in sample.assignments)
    assert per_reviewer == {"ann": 12, "bob": 12, "cai": 12}
    per_row = Counter(a.row_index for a in sample.assignments)
    assert set(per_row.values()) == {2} and len(per_row) == 18 == len(sample.picks)
    pairs = [(a.row_index, a.reviewer) for a in sample.assignments]
    assert len(pairs) == len(set(pairs))  # nobody gets a row twice
    for name in REVIEWERS:  # each reviewer's list is numbered 0..n-1
        orders = sorted(a.order for a in sample.assignments if a.reviewer == name)
        assert orders == list(range(12))


@pytest.mark.parametrize("rule", RULES)
def test_a_seed_gives_the_same_sample_and_another_seed_another(rule: str) -> None:
    first, again, other = _sample(rule), _sample(rule), _sample(rule, seed=8)
    assert first.assignments == again.assignments and first.picks == again.picks
    if rule != "threshold":  # the nearest rows are the nearest whatever the seed
        assert {p.row_index for p in first.picks} != {p.row_index for p in other.picks}


@pytest.mark.parametrize("rule", ["random", "stratified", "disagreement", "failures"])
def test_inverse_probabilities_add_up_to_the_rows_the_rule_could_pick(rule: str) -> None:
    sample = _sample(rule)
    assert sum(1 / p.probability for p in sample.picks) == pytest.approx(sample.eligible)
    rows = _rows()
    expected = {
        "random": len(rows),
        "stratified": len(rows),
        "disagreement": sum(1 for c in rows if c.row_index % 3 == 0 and c.score not in (None, 0.5)),
        "failures": sum(1 for c in rows if c.score is None or c.passing is False),
    }[rule]
    assert sample.eligible == expected


def test_random_rows_have_the_same_probability_n_over_N() -> None:
    sample = _sample("random")
    assert {p.probability for p in sample.picks} == {18 / 200}


def test_stratified_draws_equal_counts_per_score_bin() -> None:
    sample = _sample("stratified", count=10, k=1, strata=5)  # 30 rows, 6 bins (5 + nulls)
    per_stratum = Counter(p.stratum for p in sample.picks)
    assert sorted(per_stratum) == [0, 1, 2, 3, 4, 5] and set(per_stratum.values()) == {5}
    rows = {c.row_index: c for c in _rows()}
    nulls = [p for p in sample.picks if rows[p.row_index].score is None]
    assert {p.stratum for p in nulls} == {5}  # null scores are a stratum of their own
    low = max(rows[p.row_index].score or 0 for p in sample.picks if p.stratum == 0)
    high = min(rows[p.row_index].score or 0 for p in sample.picks if p.stratum == 4)
    assert low < high
    # a stratum of N_h rows giving n_h has probability n_h / N_h
    assert {round(p.probability, 9) for p in nulls} == {round(5 / 29, 9)}


def test_disagreement_picks_only_rows_whose_repeats_disagree() -> None:
    sample = _sample("disagreement", count=5)
    assert all(p.row_index % 3 == 0 for p in sample.picks)


def test_disagreement_without_repeats_says_the_run_has_none() -> None:
    with pytest.raises(ConfigError, match="this run has no repeats"):
        draw(_rows(repeats=False), ReviewOptions("disagreement", 5, REVIEWERS))


def test_threshold_picks_the_rows_nearest_the_pass_threshold() -> None:
    rows = _rows()
    assert pass_threshold(rows) == pytest.approx(0.495)
    sample = _sample("threshold", count=4, k=1)
    distances = sorted(abs((c.score or 0) - 0.495) for c in rows if c.score is not None)
    picked = sorted(abs((next(c for c in rows if c.row_index == p.row_index).score or 0) - 0.495)
                    for p in sample.picks)  # fmt: skip
    assert picked == distances[:12] and {p.probability for p in sample.picks} == {1.0}
    given = _sample("threshold", count=2, k=1, threshold=0.9)
    assert given.threshold == 0.9
    near = sorted(abs((c.score or 0) - 0.9) for c in rows if c.score is not None)[:6]
    assert sorted(abs((rows[p.row_index].score or 0) - 0.9) for p in given.picks) == near


def test_failures_picks_failing_and_null_rows_only() -> None:
    rows = {c.row_index: c for c in _rows()}
    sample = _sample("failures")
    assert all(rows[p.row_index].score is None or rows[p.row_index].passing is False
               for p in sample.picks)  # fmt: skip


def test_a_small_pool_gives_what_it_has() -> None:
    sample = draw(_rows(10), ReviewOptions("random", 20, REVIEWERS, 3))
    assert len(sample.picks) == 10 and sample.notes == ["10 rows fit the rule: fewer than 20"]
    assert Counter(a.reviewer for a in sample.assignments) == {"ann": 10, "bob": 10, "cai": 10}


@pytest.mark.parametrize(
    ("options", "error", "named"),
    [
        (ReviewOptions("often", 5, REVIEWERS), ConfigError, "rule: unknown rule 'often'"),
        (ReviewOptions("random", 0, REVIEWERS), ConfigError, "count: must be at least 1"),
        (ReviewOptions("random", MAX_COUNT + 1, REVIEWERS), LimitError, "(MAX_COUNT)"),
        (ReviewOptions("random", 5, ()), ConfigError, "reviewers: must be at least 1"),
        (ReviewOptions("random", 5, tuple(f"u{i}" for i in range(MAX_REVIEWERS + 1))),
         LimitError, "(MAX_REVIEWERS)"),
        (ReviewOptions("random", 5, REVIEWERS, k=MAX_K + 1), LimitError, "(MAX_K)"),
        (ReviewOptions("random", 5, REVIEWERS, k=4), ConfigError, "k: 4 reviewers per row"),
        (ReviewOptions("random", 5, ("ann", "ann")), ConfigError, "reviewers: a reviewer is named twice"),
        (ReviewOptions("random", 5, REVIEWERS, strata=0), ConfigError, "strata: must be at least 1"),
        (ReviewOptions("random", 5, REVIEWERS, threshold=float("nan")), ConfigError, "threshold:"),
    ],
)  # fmt: skip
def test_bad_options_are_errors_naming_the_option(
    options: ReviewOptions, error: type[Exception], named: str
) -> None:
    with pytest.raises(error) as caught:
        draw(_rows(), options)
    assert named in str(caught.value)
    if error is LimitError:
        assert caught.value.status == 422  # type: ignore[attr-defined]


def test_threshold_without_verdicts_asks_for_one() -> None:
    rows = [Candidate(i, i / 10, None) for i in range(10)]
    with pytest.raises(ConfigError, match="threshold: the run's results do not tell"):
        draw(rows, ReviewOptions("threshold", 2, ("ann",)))
