"""The reference-free metrics (answered, json_response, retrieved_any, lexical_grounding):
values worked by hand in English and Chinese, nulls with their reasons, and Hypothesis
invariants (scores in 0-1, binary ones 0 or 1, lexical grounding 1 for a response taken
from a context and 0 for one sharing no word with them)."""

from __future__ import annotations

import asyncio
import string
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ragmeter
from ragmeter.datasets import Dataset, row_from_mapping
from ragmeter.errors import DatasetError, MetricError
from ragmeter.metrics import EvaluationContext, create_metric, metric_entries
from ragmeter.metrics.reference_free import (
    AnsweredMetric,
    JsonResponseMetric,
    LexicalGroundingMetric,
    RetrievedAnyMetric,
)
from ragmeter.metrics.scales import scale_label

NAMES = ("answered", "json_response", "retrieved_any", "lexical_grounding")


def scores(rows: list[dict[str, Any]], metric: str) -> list[Any]:
    """(score, passing, feedback or null reason) of each row."""
    found = ragmeter.evaluate(rows, [metric]).results(metric)
    return [(r.score, r.passing, r.feedback if r.score is not None else r.error) for r in found]


def test_registered_by_name_with_a_scale_and_a_formula() -> None:
    entries = {e.name: e for e in metric_entries()}
    for name in NAMES:
        assert scale_label(name) == "0–1"
        assert "=" in entries[name].description  # the listing shows the formula
    assert create_metric("AnsweredMetric").metric_name == "AnsweredMetric"
    assert "not faithfulness" in entries["lexical_grounding"].description


def test_answered() -> None:
    rows = [
        {"query": "q", "response": "Refunds take 30 days."},
        {"query": "q", "response": "  \n\t "},
        {"query": "q", "response": "?!…"},
        {"query": "q", "response": "。？！"},  # Chinese punctuation only
        {"query": "q", "response": "可以。"},
        {"query": "q", "response": "42"},
        {"query": "q", "response": "👍"},
        {"query": "q", "response": "\u200b"},  # a zero-width space: invisible
        {"query": "q"},  # a trace that failed before answering
    ]
    found = scores(rows, "answered")
    assert [s for s, _, _ in found] == [1, 0, 0, 0, 1, 1, 1, 0, 0]
    assert [p for _, p, _ in found] == [True, False, False, False, True, True, True, False, False]
    assert found[1][2] == "the response is empty"
    assert found[2][2] == found[3][2] == "the response has only punctuation or invisible characters"
    assert found[8][2] == "the row has no response (field 'response')"


def test_json_response() -> None:
    rows = [
        {"query": "q", "response": '{"intent": "refund"}'},
        {"query": "q", "response": " [1, 2] \n"},
        {"query": "q", "response": "42"},
        {"query": "q", "response": '```json\n{"a": 1}\n```'},
        {"query": "q", "response": '{"a": 1,}'},
        {"query": "q", "response": "NaN"},
        {"query": "q", "response": ""},
        {"query": "q", "response": '{"意图": "退款"}'},
    ]
    assert [s for s, _, _ in scores(rows, "json_response")] == [1, 1, 1, 0, 0, 0, 0, 1]
    objects = scores(rows, "json_response(shape=object)")
    assert [s for s, _, _ in objects] == [1, 0, 0, 0, 0, 0, 0, 1]
    assert objects[1][2] == "the response is JSON but not an object (array)"
    assert objects[2][2] == "the response is JSON but not an object (number)"
    assert objects[3][2].startswith("the response is not JSON (")
    arrays = scores(rows, "json_response(shape=array)")
    assert [s for s, _, _ in arrays] == [0, 1, 0, 0, 0, 0, 0, 0]
    with pytest.raises(MetricError, match="shape must be one of any, object, array"):
        create_metric("json_response(shape=dict)")


def test_json_response_needs_a_response() -> None:
    with pytest.raises(DatasetError, match="'json_response' needs response"):
        ragmeter.evaluate([{"query": "q", "response": "{}"}, {"query": "q"}], ["json_response"])
    assert JsonResponseMetric().sync_compute(None).feedback == (
        "the row has no response (field 'response')"
    )


def test_retrieved_any() -> None:
    rows = [
        {"query": "q", "retrieved_contexts": ["c"]},
        {"query": "q", "retrieved_ids": ["d1"]},
        {"query": "q", "retrieved_contexts": [], "retrieved_ids": []},
        {"query": "q", "response": "no retrieval"},
    ]
    found = scores(rows, "retrieved_any")
    assert [(s, p) for s, p, _ in found] == [(1, True), (1, True), (0, False), (0, False)]
    assert found[2][2] == "the retrieval returned nothing"
    assert found[3][2] == "the row has no retrieved contexts or ids"


def test_lexical_grounding_english_by_hand() -> None:
    # response words: refund, process, within, 30, day (stemmed, "the"/"are" dropped);
    # context words: refund, process, 5, busi, day, financ, team -> 3 of 5 found
    row = {
        "query": "How long do refunds take?",
        "response": "The refunds are processed within 30 days.",
        "retrieved_contexts": ["Refunds are processed in 5 business days by the finance team."],
    }
    [(score, passing, feedback)] = scores([row], "lexical_grounding")
    assert score == pytest.approx(3 / 5)
    assert passing is None
    assert feedback == "2 of 5 words not in the contexts: within, 30"


def test_lexical_grounding_chinese_by_hand() -> None:
    # response words (jieba): 退款 需要 30 天 内 申请 ("在" is a stop word); every one but
    # 需要 appears in the second context -> 5 of 6
    row = {
        "query": "退款多久可以申请？",
        "response": "退款需要在30天内申请。",
        "retrieved_contexts": ["会员可以免费退货", "退款在收到商品后30天内可以申请。"],
    }
    [(score, _, feedback)] = scores([row], "lexical_grounding")
    assert score == pytest.approx(5 / 6)
    assert feedback == "1 of 6 words not in the contexts: 需要"


def test_lexical_grounding_chinese_words_count_where_jieba_cuts_the_context_otherwise() -> None:
    # jieba cuts the context 南京/京市/南京市/长江/大桥/长江大桥 but the response 南京/京市/
    # 南京市/长: the word 长 is no word of the context, but its character is there
    metric = LexicalGroundingMetric()
    assert metric.sync_compute("南京市长", ["南京市长江大桥"]).score == 1.0
    # and so a lexical proxy: 和尚 (a monk) is "in" 结婚的和尚未结婚的 (the married and the
    # not yet married), which says nothing of monks
    assert metric.sync_compute("和尚", ["结婚的和尚未结婚的"]).score == 1.0
    assert (
        metric.sync_compute("Paris is the capital", ["The capital of France is Paris."]).score == 1
    )


def test_lexical_grounding_nulls_have_reasons() -> None:
    rows = [
        {"query": "q", "response": "It is what it is.", "retrieved_contexts": ["x"]},
        {"query": "q", "response": "是的。", "retrieved_contexts": ["是的"]},
        {"query": "q", "response": "Paris", "retrieved_contexts": []},
        {"query": "q", "response": "Paris", "retrieved_contexts": ["  "]},
    ]
    found = scores(rows, "lexical_grounding")
    assert [s for s, _, _ in found] == [None] * 4
    no_words = "the response has no content words (only stop words, punctuation or spaces)"
    no_contexts = "the row retrieved no contexts (field 'retrieved_contexts' is empty)"
    assert [r for _, _, r in found] == [no_words, no_words, no_contexts, no_contexts]
    report = ragmeter.evaluate(rows, ["lexical_grounding"])
    assert {r.error_kind for r in report.results("lexical_grounding")} == {"input"}
    with pytest.raises(DatasetError, match="needs retrieved_contexts"):
        ragmeter.evaluate([{"query": "q", "response": "Paris"}], ["lexical_grounding"])


def test_rows_without_any_reference_are_scored() -> None:
    row = {"query": "q", "response": "a", "retrieved_ids": ["x"], "retrieved_contexts": ["c"]}
    with pytest.raises(DatasetError):  # every reference-based deterministic metric refuses it
        ragmeter.evaluate([row], ["num_ret"])
    report = ragmeter.evaluate([row], list(NAMES))
    assert report.scores("answered") == [1.0]
    assert report.scores("retrieved_any") == [1.0]
    assert report.scores("json_response") == [0.0]
    assert report.scores("lexical_grounding") == [None]  # "a" is a stop word


# -- Hypothesis --------------------------------------------------------------------------

HAN = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去"
HAN_OTHER = "之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方"
ascii_words = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8)
han_words = st.text(HAN + HAN_OTHER, min_size=1, max_size=6)
pieces = st.lists(st.one_of(ascii_words, han_words), min_size=0, max_size=6)


def batch_and_row(metric: Any, rows: list[dict[str, Any]]) -> list[float | None]:
    """Scores of the batch path, checked against ``sync_compute`` row by row."""
    table = Dataset([row_from_mapping(r, i) for i, r in enumerate(rows)])
    found = asyncio.run(metric.compute_rows(table, EvaluationContext())).score_list()
    for row, value in zip(table, found, strict=True):
        prediction, contexts, query = metric.row_inputs(row, EvaluationContext())
        assert metric.sync_compute(prediction, contexts, query).score == value
    return list(found)


@given(
    st.lists(
        st.tuples(st.text(max_size=60), st.none() | st.lists(st.text(max_size=60), max_size=3)),
        min_size=1,
        max_size=5,
    )
)
@settings(max_examples=150, deadline=None)
def test_scores_are_in_0_1_and_binary_ones_are_0_or_1(cases: list[tuple[str, Any]]) -> None:
    rows = [
        {"query": "q", "response": text, "retrieved_contexts": contexts} for text, contexts in cases
    ]
    for metric in (AnsweredMetric(), JsonResponseMetric(), RetrievedAnyMetric()):
        assert set(batch_and_row(metric, rows)) <= {0.0, 1.0}
    rows = [r for r in rows if r["retrieved_contexts"] is not None]
    for value in batch_and_row(LexicalGroundingMetric(), rows):
        assert value is None or 0.0 <= value <= 1.0


@given(pieces, st.lists(ascii_words | han_words, min_size=1, max_size=5), pieces, st.text())
@settings(max_examples=150, deadline=None)
def test_a_response_taken_from_a_context_scores_1(
    before: list[str], taken: list[str], after: list[str], other: str
) -> None:
    response = " ".join(taken)
    context = " ".join([*before, response, *after])
    score = LexicalGroundingMetric().sync_compute(response, [other, context]).score
    assert score is None or score == 1.0


@given(st.text(HAN + HAN_OTHER, min_size=1, max_size=30), st.data())
@settings(max_examples=150, deadline=None)
def test_any_part_of_chinese_text_scores_1(context: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(context) - 1))
    end = data.draw(st.integers(start + 1, len(context)))
    score = LexicalGroundingMetric().sync_compute(context[start:end], [context]).score
    assert score is None or score == 1.0


@given(
    st.lists(st.text("abcdefghijklm", min_size=1) | st.text(HAN, min_size=1), min_size=1),
    st.lists(st.text("nopqrstuvwxyz", min_size=1) | st.text(HAN_OTHER, min_size=1), min_size=1),
)
@settings(max_examples=150, deadline=None)
def test_a_response_sharing_no_word_scores_0(response: list[str], contexts: list[str]) -> None:
    score = LexicalGroundingMetric().sync_compute(" ".join(response), contexts).score
    assume(score is not None)  # not only stop words
    assert score == 0.0
