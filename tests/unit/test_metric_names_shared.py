"""``score_rankings`` and ``evaluate`` name the results of one metric list alike."""

from __future__ import annotations

import pytest

from ragmeter import evaluate
from ragmeter.errors import MetricError
from ragmeter.metrics import score_rankings

SPECS = [
    "P@10",
    "P_5",
    "mrr",
    "ndcg_cut_10",
    "RetrieverHitRateMetric",
    "hit_rate@3",
    "recall@5",
    "map",
    "bpref",
]


def test_the_same_metric_list_yields_the_same_keys_from_both() -> None:
    rows = [
        {"query": "q1", "retrieved_ids": ["a", "b", "c"], "reference_ids": ["b"]},
        {"query": "q2", "retrieved_ids": ["c", "d"], "reference_ids": ["c", "x"]},
    ]
    report = evaluate(rows, metrics=SPECS, store=False)
    scores = score_rankings(
        [r["retrieved_ids"] for r in rows], [r["reference_ids"] for r in rows], SPECS
    )
    assert list(scores) == report.metric_names
    assert "precision@10" in scores and "P@10" not in scores
    for name, values in scores.items():  # the same numbers under the same name
        assert list(values) == pytest.approx(report.scores(name))


def test_one_metric_under_two_spellings_is_refused_by_both() -> None:
    rows = [{"query": "q", "retrieved_ids": ["a"], "reference_ids": ["a"]}]
    with pytest.raises(MetricError, match="metric given twice: precision@10"):
        score_rankings([["a"]], [["a"]], ["P@10", "precision@10"])
    with pytest.raises(MetricError, match="metric given twice: precision@10"):
        evaluate(rows, metrics=["P@10", "precision@10"], store=False)
