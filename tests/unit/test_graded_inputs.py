"""Graded relevance as users hand it in: the batch API's checks (grades, text for a list,
unhashable ids, each naming the row), numpy and Parquet grades, rows of very different list
lengths scored in groups, and settings that mean nothing for a metric refused."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragmeter
from ragmeter.errors import DatasetError, MetricError
from ragmeter.judge import JudgeEngine, JudgeSettings
from ragmeter.metrics import create_metric, score_rankings

SPECS = ["ndcg", "ndcg@5", "map", "bpref", "P@10", "mrr", "infap", "iprec@0.5", "G", "num_rel"]


@pytest.mark.parametrize("grade", [40_000, 32_768, -1001, 1.5, True, "2", None])
def test_a_grade_outside_the_limit_or_not_whole_is_refused_naming_row_and_id(grade: object) -> None:
    with pytest.raises(MetricError, match=r"row 1: the grade of 'bad' is .*whole number"):
        score_rankings([["a"], ["bad"]], [{"a": 1}, {"bad": grade}], ["ndcg"])  # type: ignore[dict-item]


def test_numpy_grades_are_grades() -> None:
    scores = score_rankings(
        [["a", "b"]], [{"a": np.int64(2), "b": np.float64(1.0)}], ["ndcg", "num_rel"]
    )
    assert scores["ndcg"].tolist() == [1.0] and scores["num_rel"].tolist() == [2.0]
    row = {"query": "q", "retrieved_ids": ["a"], "reference_relevance": {"a": np.int32(3)}}
    assert ragmeter.evaluate([row], ["num_rel"]).scores("num_rel") == [1.0]


def test_text_where_a_list_of_ids_belongs_is_refused_not_read_letter_by_letter() -> None:
    with pytest.raises(MetricError, match="row 0: its relevant ids is text"):
        score_rankings([["abc"]], ["abc"], ["P@1"])
    with pytest.raises(MetricError, match="row 0: the retrieved list is text"):
        score_rankings(["abc"], [{"abc"}], ["P@1"])


def test_an_unhashable_id_is_a_metric_error() -> None:
    with pytest.raises(MetricError, match="hashable"):
        score_rankings([[["nested"]]], [{"a"}], ["P@1"])


def test_gain_metrics_refuse_a_relevance_level_they_would_ignore() -> None:
    for spec in ("ndcg(rel=2)", "dcg(relevance_level=3)", "rbp(rel=2)"):
        with pytest.raises(MetricError, match="relevance level has no meaning"):
            create_metric(spec)
    assert create_metric("r_ndcg(rel=2)").rel == 2  # Rndcg averages at the level's ranks


@given(
    st.lists(st.integers(0, 300), min_size=2, max_size=30),
    st.lists(st.integers(-1, 3), min_size=1, max_size=40),
)
@settings(max_examples=60, deadline=None)
def test_rows_of_very_different_lengths_score_as_they_would_alone(
    lengths: list[int], grades: list[int]
) -> None:
    """Rows are judged in groups of like length; the scores are each row's own."""
    retrieved = [[f"d{(i * 7 + j) % 50}" for j in range(n)] for i, n in enumerate(lengths)]
    relevant = [
        {f"d{(i + j * 3) % 50}": grades[(i + j) % len(grades)] for j in range(1 + i % 6)}
        for i in range(len(lengths))
    ]
    together = score_rankings(retrieved, relevant, SPECS, no_relevant="zero")
    assert len(together) == len(SPECS)
    for i in range(len(lengths)):
        alone = score_rankings([retrieved[i]], [relevant[i]], SPECS, no_relevant="zero")
        for spec in together:
            assert math.isclose(together[spec][i], alone[spec][0], abs_tol=1e-12), (spec, i)


def test_one_very_long_list_does_not_widen_every_row() -> None:
    retrieved = [[f"d{j}" for j in range(10)] for _ in range(2000)]
    retrieved[0] = [f"d{j}" for j in range(200_000)]
    relevant = [{"d1": 2, "d5": 1} for _ in retrieved]
    scores = score_rankings(retrieved, relevant, ["ndcg", "bpref"])  # 2000 x 200,000 would be GBs
    assert len(scores["ndcg"]) == 2000 and not np.isnan(scores["ndcg"]).any()


def test_graded_rows_round_trip_through_parquet(tmp_path: Path) -> None:
    """pyarrow keeps the rows' grade dicts as one struct of every row's ids: an id another
    row judges reads back as None, and is not judged by this row."""
    frame = pd.DataFrame(
        [
            {"query": "a", "retrieved_ids": ["a", "b"], "reference_relevance": {"a": 2, "b": 0}},
            {"query": "b", "retrieved_ids": ["c"], "reference_relevance": {"c": 1}},
        ]
    )
    path = tmp_path / "graded.parquet"
    frame.to_parquet(path)
    report = ragmeter.evaluate(path, ["num_rel", "num_nonrel_judged_ret", "ndcg"])
    assert report.scores("num_rel") == [1.0, 1.0]
    assert report.scores("num_nonrel_judged_ret") == [1.0, 0.0]
    assert report.scores("ndcg") == [1.0, 1.0]


def test_a_null_grade_in_a_row_says_null() -> None:
    with pytest.raises(DatasetError, match="the grade of 'a' is null"):
        ragmeter.evaluate([{"query": "q", "retrieved_ids": ["a"], "reference_relevance": {"a": None}}], ["ndcg"])  # fmt: skip


def test_judged_metrics_need_a_question() -> None:
    """A row may have no query (an id-only ranking, a conversation the assistant started),
    but a metric that judges against the question does not score it."""
    rows = [
        {"query": "", "retrieved_ids": ["a"], "reference_ids": ["a"], "response": "x",
         "retrieved_contexts": ["c"]}
    ]  # fmt: skip
    assert ragmeter.evaluate(rows, ["num_ret"]).scores("num_ret") == [1.0]
    # a judge nobody listens to: the row is refused before any request
    judge = JudgeEngine(JudgeSettings(model="m", base_url="http://127.0.0.1:9/v1", api_key="k"))
    for metric in ("answer_relevancy", "faithfulness", "AnswerRelevancyMetric"):
        with pytest.raises(DatasetError, match="needs query"):
            ragmeter.evaluate(rows, [metric], judge=judge)
