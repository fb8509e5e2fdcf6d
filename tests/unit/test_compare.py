"""Comparing two runs: a comparison of nothing is an error, a metric without pairs says why."""

from __future__ import annotations

import pytest

from ragmeter.errors import ConfigError
from ragmeter.runs.compare import compare_scores


def test_runs_with_no_shared_query_are_an_error() -> None:
    base = [("q1", "mrr", 0.5), ("q2", "mrr", 1.0)]
    other = [("q3", "mrr", 1.0), ("q4", "mrr", 0.0)]
    with pytest.raises(ConfigError, match="share no scored query") as info:
        compare_scores(base, other)
    assert "mrr" in str(info.value) and "query text" in str(info.value)


def test_shared_queries_null_on_one_side_are_no_pairs() -> None:
    base = [("q1", "mrr", None), ("q2", "mrr", 1.0)]
    other = [("q1", "mrr", 1.0), ("q2", "mrr", None)]
    with pytest.raises(ConfigError, match="share no scored query"):
        compare_scores(base, other)


def test_a_metric_without_pairs_gets_a_note() -> None:
    base = [("q1", "mrr", 0.5), ("q1", "faithfulness", None)]
    other = [("q1", "mrr", 1.0), ("q1", "faithfulness", 0.8)]
    mrr, faithfulness = compare_scores(base, other)
    assert (mrr.paired, mrr.delta, mrr.note) == (1, 0.5, None)
    assert (faithfulness.paired, faithfulness.delta) == (0, None)
    assert faithfulness.other_mean == 0.8
    assert faithfulness.note == (
        "no query is scored in both runs (0 rows scored in the base run, 1 in the other; "
        "rows pair by query text)"
    )


def test_runs_with_no_shared_metric_are_an_error() -> None:
    with pytest.raises(ConfigError, match=r"share no metric \(base: mrr; other: ndcg\)"):
        compare_scores([("q1", "mrr", 1.0)], [("q1", "ndcg", 1.0)])
