"""Hand-worked examples of the formulas in DESIGN.md, and the match modes."""

from __future__ import annotations

import math

import pytest

import ragmeter
from ragmeter.metrics import score_rankings
from ragmeter.metrics.retrieval import judge_exact, judge_overlap

LOG2_3 = math.log2(3)


def test_hand_worked_ranking() -> None:
    # relevant {b, d}; ranking a b c d -> relevant at ranks 2 and 4
    scores = score_rankings([["a", "b", "c", "d"]], [["b", "d"]], [
        "hit_rate@1", "hit_rate@2", "mrr", "precision@2", "precision@4", "recall@2", "recall@4",
        "ndcg@4", "map@4", "map@2",
    ])  # fmt: skip
    dcg = 1 / LOG2_3 + 1 / math.log2(5)
    idcg = 1 + 1 / LOG2_3
    expected = {
        "hit_rate@1": 0.0,
        "hit_rate@2": 1.0,
        "mrr": 0.5,
        "precision@2": 0.5,
        "precision@4": 0.5,
        "recall@2": 0.5,
        "recall@4": 1.0,
        "ndcg@4": dcg / idcg,
        "map@4": (1 / 2 + 2 / 4) / 2,
        "map@2": (1 / 2) / 2,
    }
    for name, value in expected.items():
        assert scores[name][0] == pytest.approx(value, abs=1e-12), name


def test_precision_at_k_divides_by_k_even_when_fewer_retrieved() -> None:
    scores = score_rankings([["a"]], [["a"]], ["precision@5", "precision"])
    assert scores["precision@5"][0] == pytest.approx(0.2)
    assert scores["precision"][0] == pytest.approx(1.0)


def test_repeated_relevant_item_counts_once_at_best_rank() -> None:
    j = judge_exact([["x", "a", "a", "b"]], [["a", "b"]])
    assert j.relevant().tolist() == [[False, True, False, True]]
    scores = score_rankings([["a", "a"]], [["a"]], ["recall@2", "precision@2"])
    assert scores["recall@2"][0] == 1.0
    assert scores["precision@2"][0] == 0.5


def test_overlap_matching_credits_each_reference_once() -> None:
    reference = (
        "AWEL is divided into three levels: the operator layer, AgentFream layer and DSL layer."
    )
    retrieved = [
        "Unrelated text about the weather in spring.",
        "AWEL is divided into three levels: the operator layer, AgentFream layer and DSL layer. "
        "The following is a brief introduction.",  # contains the reference
        "the operator layer AgentFream layer and DSL layer",  # also inside it, credited already
    ]
    j = judge_overlap([retrieved], [[reference]], threshold=0.8)
    assert j.relevant().tolist() == [[False, True, False]]
    assert j.n_relevant().tolist() == [1]


def test_overlap_tokenises_chinese_by_character() -> None:
    j = judge_overlap([["知识库检索评测指标", "天气很好"]], [["检索评测指标"]])
    assert j.relevant().tolist() == [[True, False]]


def test_match_modes_through_evaluate() -> None:
    rows = [
        {
            "query": "q",
            "retrieved_contexts": ["chunk one", "Chunk two, rewritten"],
            "reference_contexts": ["chunk two rewritten"],
            "retrieved_ids": ["c1", "c2"],
            "reference_ids": ["c2"],
        }
    ]
    report = ragmeter.evaluate(
        rows, ["mrr", "mrr(match=exact)", "mrr(match=overlap)", "mrr(match=id)"]
    )
    assert report.scores("mrr") == [0.5]  # auto -> ids
    assert report.scores("mrr(match=exact)") == [0.0]
    assert report.scores("mrr(match=overlap)") == [0.5]
    assert report.scores("mrr(match=id)") == [0.5]


def test_no_relevant_item_is_null_with_reason_and_excluded_from_mean() -> None:
    rows = [
        {"query": "a", "retrieved_contexts": ["x", "y"], "reference_contexts": ["y"]},
        {"query": "b", "retrieved_contexts": ["x"], "reference_contexts": []},
        {"query": "c", "retrieved_contexts": [], "reference_contexts": ["x"]},
    ]
    report = ragmeter.evaluate(rows, ["mrr", "ndcg@3"])
    assert report.scores("mrr") == [0.5, None, 0.0]
    (null,) = report.errors("mrr")
    assert null.row_index == 1
    assert null.error is not None
    assert "no relevant item" in null.error
    summary = report.summary()["mrr"]
    assert summary["mean"] == pytest.approx(0.25)
    assert (summary["count"], summary["null"]) == (2, 1)
