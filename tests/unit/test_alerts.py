"""Alert rules: the grammar (a gate rule's condition, a window, a minimum n), clear errors,
the statistic over a window and the episode steps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from ragmeter.errors import ConfigError
from ragmeter.reports.stats import SMALL_SAMPLE, bootstrap_mean_ci
from ragmeter.runs.monitor.alerts import parse_alert, read_window, step


def test_the_issue_example_parses() -> None:
    rule = parse_alert("faithfulness.mean < 0.8 over 1h with n >= 50")
    assert rule.metric == "faithfulness" and rule.condition.stat == "mean"
    assert rule.condition.op == "<" and rule.condition.bound == 0.8
    assert rule.window_seconds == 3_600 and rule.min_n == 50
    assert rule.text == "faithfulness.mean < 0.8 over 1h with n >= 50"


@pytest.mark.parametrize(
    ("text", "window", "n", "canonical"),
    [
        ("ndcg@10.ci95_high<0.5 over 15m", 900, SMALL_SAMPLE, "ndcg@10.ci95_high < 0.5 over 15m"),
        (
            "  mrr.null_rate >= .1   over 2d   with n>=5 ",
            172_800,
            5,
            "mrr.null_rate >= 0.1 over 2d",
        ),
        ("a.b.mean <= 1e-1 over 90m", 5_400, SMALL_SAMPLE, "a.b.mean <= 0.1 over 90m"),
    ],
)
def test_spellings(text: str, window: int, n: int, canonical: str) -> None:
    rule = parse_alert(text)
    assert (rule.window_seconds, rule.min_n) == (window, n)
    assert rule.text == f"{canonical} with n >= {n}"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("faithfulness.mean < 0.8", "not understood"),
        ("faithfulness < 0.8 over 1h", "not understood"),
        ("faithfulness.median < 0.8 over 1h", "unknown statistic 'median'"),
        ("faithfulness.pass_rate < 0.8 over 1h", "gate statistic alerts do not bound"),
        ("faithfulness.mean < abc over 1h", "'abc' is not a number"),
        ("faithfulness.mean < nan over 1h", "'nan' is not a number"),
        ("faithfulness.mean < 0.8 over 1w", "'1w' is not a number of minutes"),
        ("faithfulness.mean < 0.8 over 31d", "outside 1m to 30d"),
        ("faithfulness.mean < 0.8 over 1h with n >= 0", "whole number from 1"),
        ("faithfulness.mean < 0.8 over 1h with n >= 2.5", "whole number from 1"),
        ("faithfulness.null_rate > 2 over 1h", "share between 0 and 1"),
        ("faithfulness: delta >= -0.02 over 1h", "not understood"),
    ],
)
def test_errors_name_the_rule_and_the_problem(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match="alert rule") as caught:
        parse_alert(text)
    assert says in str(caught.value)


def test_the_statistics_over_a_window() -> None:
    rng = np.random.default_rng(1)
    scores = rng.random(80)
    scores[:8] = np.nan
    scored = scores[~np.isnan(scores)]
    mean = read_window(parse_alert("m.mean < 0.9 over 1h"), scores)
    assert mean.value == pytest.approx(scored.mean()) and mean.n == 72 and mean.holds
    low = read_window(parse_alert("m.ci95_low < 0.1 over 1h"), scores)
    assert low.value == bootstrap_mean_ci(scored)[0] and low.holds is False
    nulls = read_window(parse_alert("m.null_rate > 0.05 over 1h with n >= 80"), scores)
    assert nulls.value == pytest.approx(0.1) and nulls.n == 80 and nulls.holds


def test_too_few_values_decide_nothing() -> None:
    rule = parse_alert("m.mean < 0.9 over 1h with n >= 50")
    few = read_window(rule, np.full(49, 0.1))
    assert few.value == pytest.approx(0.1) and few.holds is None
    assert read_window(rule, np.array([])).value is None
    assert read_window(rule, np.full(50, 0.1)).holds is True


@given(hs.lists(hs.sampled_from([True, False, None]), max_size=60))
def test_episodes_fire_once_per_spell_of_true(readings: list[bool | None]) -> None:
    """Over any sequence of readings, with undecided ones (None) skipped, a rule fires at the
    start of each run of True and resolves at the start of each run of False after one."""
    open_episode, fired, resolved = False, 0, 0
    for holds in readings:
        todo = step(open_episode, holds)
        if todo == "fire":
            fired, open_episode = fired + 1, True
        elif todo == "resolve":
            resolved, open_episode = resolved + 1, False
    decided = [h for h in readings if h is not None]
    spells = sum(1 for i, h in enumerate(decided) if h and (i == 0 or not decided[i - 1]))
    assert fired == spells
    assert resolved == fired - (1 if decided and decided[-1] else 0)
