"""Each metric's scale, shown beside its name wherever scores are tabled: every built-in
metric declares one, a result's name (a spec, a class name, a trec_eval name) finds it again,
and a user's metric without one shows none."""

from __future__ import annotations

import pytest

from ragmeter.metrics import RetrieverEvaluationMetric
from ragmeter.metrics.registry import metric_entries
from ragmeter.metrics.scales import format_scale, metric_scales, scale_label


def test_every_built_in_metric_declares_its_scale() -> None:
    undeclared = [e.name for e in metric_entries() if scale_label(e.name) is None]
    assert undeclared == []


@pytest.mark.parametrize(
    ("name", "scale"),
    [
        ("answer_relevancy", "0–1"),  # RAGAS: a cosine clipped at 0
        ("AnswerRelevancyMetric", "0–5"),  # DB-GPT's judged score
        ("answer_relevancy_0_5", "0–5"),
        ("RetrieverMRRMetric", "0–1"),
        ("ndcg@10", "0–1"),
        ("P_5", "0–1"),  # a trec_eval name with its cut-off
        ("mrr(match=overlap)@5", "0–1"),
        ("retrieval_similarity(reduce=first)", "-1 to 1"),
        ("dcg@10", "≥ 0"),
        ("num_rel_ret", "≥ 0"),
        ("utility", "unbounded"),
        ("faithfulness", "0–1"),
        ("tool_call_f1", "0–1"),
        ("IntentMetric", "0–1"),
    ],
)
def test_a_result_name_finds_its_scale(name: str, scale: str) -> None:
    assert scale_label(name) == scale


def test_unknown_names_and_undeclared_metrics_show_none() -> None:
    assert scale_label("my_metric") is None
    assert scale_label("x" * 500) is None  # over a spec's length: no scale, no error
    assert scale_label("mrr@") is None

    class Mine(RetrieverEvaluationMetric):
        def sync_compute(self, prediction, contexts=None, query=None):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    assert metric_scales([Mine()]) == {}
    Mine.scale = (0.0, 10.0)
    assert metric_scales([Mine()]) == {"Mine": "0–10"}
    assert format_scale((None, 1.0)) == "≤ 1"
