"""The judge's reasoning kept per result (``details``): each judged metric fills it in the one
shape the dashboard and the HTML report render (groups of items, named values), from what the
scripted judge said; texts and item counts are capped; metrics with no reasoning leave it null
and pay nothing for it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.embeddings import embedder_from_config
from ragmeter.judge.from_config import judge_from_config
from ragmeter.reports import ResultRecord
from ragmeter.reports.details import CONTEXT_CHARS, MAX_ITEMS, TEXT_CHARS
from ragmeter.testing import ScriptedJudgeServer

ROW = {
    "query": "What is the capital of France?",
    "response": "Paris is the capital of France. The moon is made of green cheese.",
    "reference": "Paris is the capital of France. Paris lies on the Seine river.",
    "retrieved_contexts": [
        "Berlin is the capital of Germany.",
        "Paris is the capital of France and its largest city.",
    ],
}
ITEM_KEYS = {"text", "verdict", "reason", "value"}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as judge:
        yield judge


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path / "home"))


def _evaluate(server: ScriptedJudgeServer, rows: Any, metrics: str) -> ragmeter.EvaluationReport:
    judge = judge_from_config("scripted", base_url=server.url, cache=False)
    embedder = embedder_from_config("scripted", base_url=server.url)
    return ragmeter.evaluate(rows, metrics, judge=judge, embedder=embedder)


def _details(report: ragmeter.EvaluationReport, metric: str, row: int = 0) -> dict[str, Any]:
    found = report.results(metric)[row].details
    assert found is not None, metric
    assert set(found) <= {"groups", "values"}
    for group in found["groups"]:
        assert set(group) == {"kind", "items"}
        assert all(set(item) == ITEM_KEYS for item in group["items"])
    json.dumps(found)  # plain JSON, as stored
    return found


def _kinds(details: dict[str, Any]) -> list[str]:
    return [g["kind"] for g in details["groups"]]


def test_faithfulness_keeps_each_response_statement_with_its_verdict(
    server: ScriptedJudgeServer,
) -> None:
    report = _evaluate(server, [ROW], "faithfulness")
    details = _details(report, "faithfulness")
    assert _kinds(details) == ["response_statements"]
    items = details["groups"][0]["items"]
    assert [(i["text"], i["verdict"]) for i in items] == [
        ("Paris is the capital of France.", True),
        ("The moon is made of green cheese.", False),
    ]
    assert [i["reason"] for i in items] == ["found in the contexts", "not found in the contexts"]
    assert report.scores("faithfulness") == [0.5]  # the verdicts are what the score counts


def test_context_recall_keeps_each_reference_statement_with_its_verdict(
    server: ScriptedJudgeServer,
) -> None:
    report = _evaluate(server, [ROW], "context_recall")
    details = _details(report, "context_recall")
    assert _kinds(details) == ["reference_statements"]
    items = details["groups"][0]["items"]
    assert [(i["text"], i["verdict"]) for i in items] == [
        ("Paris is the capital of France.", True),
        ("Paris lies on the Seine river.", False),
    ]


def test_answer_correctness_keeps_both_sides_and_the_numbers_of_its_score(
    server: ScriptedJudgeServer,
) -> None:
    report = _evaluate(server, [ROW], "answer_correctness")
    details = _details(report, "answer_correctness")
    assert _kinds(details) == ["response_statements", "reference_statements"]
    response, reference = (g["items"] for g in details["groups"])
    assert [i["verdict"] for i in response] == [True, False]  # in the reference?
    assert [i["verdict"] for i in reference] == [True, False]  # in the response?
    values = details["values"]
    assert (values["tp"], values["fp"], values["fn"]) == (1, 1, 1)
    assert values["f1"] == pytest.approx(0.5)
    assert 0.0 <= values["similarity"] <= 1.0
    score = report.scores("answer_correctness")[0]
    assert score == pytest.approx(0.75 * values["f1"] + 0.25 * values["similarity"])


def test_answer_relevancy_keeps_the_questions_and_their_cosines(
    server: ScriptedJudgeServer,
) -> None:
    noncommittal = {**ROW, "query": "Who wrote it?", "response": "I do not know."}
    report = _evaluate(server, [ROW, noncommittal], "answer_relevancy")
    details = _details(report, "answer_relevancy")
    assert _kinds(details) == ["questions"]
    items = details["groups"][0]["items"]
    assert len(items) == 3 and all(i["text"].startswith("What about") for i in items)
    assert all(i["verdict"] is None for i in items)
    cosines = [i["value"] for i in items]
    assert report.scores("answer_relevancy")[0] == pytest.approx(sum(cosines) / 3)
    assert details["values"] == {"noncommittal": 0}
    shrug = _details(report, "answer_relevancy", 1)
    assert shrug["values"] == {"noncommittal": 1}
    assert all(i["value"] is None for i in shrug["groups"][0]["items"])  # nothing embedded
    assert report.scores("answer_relevancy")[1] == 0.0


def test_context_precision_keeps_each_context_with_its_rank_and_verdict(
    server: ScriptedJudgeServer,
) -> None:
    long = "Paris is the capital of France. " + "Filler words here. " * 100
    row = {**ROW, "retrieved_contexts": [*ROW["retrieved_contexts"], long]}
    report = _evaluate(server, [row, {**row, "reference": None}], "context_precision")
    details = _details(report, "context_precision")
    assert _kinds(details) == ["contexts"]
    items = details["groups"][0]["items"]
    assert [(i["value"], i["verdict"]) for i in items] == [(1, False), (2, True), (3, True)]
    assert items[0]["text"] == "Berlin is the capital of Germany."
    assert items[1]["reason"] == "shares the answer's facts"
    assert len(items[2]["text"]) == CONTEXT_CHARS and items[2]["text"].endswith("…")
    assert details["values"] == {"judged_against_reference": 1}
    assert _details(report, "context_precision", 1)["values"] == {"judged_against_reference": 0}


def test_dbgpt_answer_relevancy_keeps_its_0_to_5_feedback(server: ScriptedJudgeServer) -> None:
    report = _evaluate(server, [ROW], "AnswerRelevancyMetric")
    details = _details(report, "AnswerRelevancyMetric")
    assert _kinds(details) == ["feedback"]
    [item] = details["groups"][0]["items"]
    result = report.results("AnswerRelevancyMetric")[0]
    assert item["value"] == result.score and result.score is not None
    assert item["text"] == result.feedback and "answer sentences are backed" in item["text"]


def test_a_hostile_response_cannot_blow_up_the_details(server: ScriptedJudgeServer) -> None:
    """300 statements keep 200; a 5,000-character statement keeps 1,000 characters."""
    many = " ".join(f"Fact number {i} holds." for i in range(300))
    huge = "word " * 1000 + "end."
    report = _evaluate(
        server, [{**ROW, "response": many}, {**ROW, "response": huge}], "faithfulness"
    )
    assert len(_details(report, "faithfulness")["groups"][0]["items"]) == MAX_ITEMS
    [statement] = _details(report, "faithfulness", 1)["groups"][0]["items"]
    assert len(statement["text"]) == TEXT_CHARS


def test_retrieval_metrics_record_no_details_and_pay_nothing_for_them() -> None:
    rows = [
        {"query": f"q{i}", "retrieved_ids": ["a", "b"], "reference_ids": ["b"]} for i in range(5)
    ]
    report = ragmeter.evaluate(rows, "mrr,hit_rate")
    assert all(r.details is None for r in report)
    assert report.to_pandas()["details"].isna().all()


def test_the_jsonl_lines_carry_details(server: ScriptedJudgeServer, tmp_path: Path) -> None:
    row = {**ROW, "reference_contexts": [ROW["retrieved_contexts"][1]]}
    report = _evaluate(server, [row], "faithfulness,mrr")
    text = report.to_jsonl(tmp_path / "out.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    by_metric = {line["metric_name"]: line for line in lines}
    assert by_metric["faithfulness"]["details"]["groups"][0]["kind"] == "response_statements"
    assert by_metric["mrr"]["details"] is None


def test_a_record_from_an_older_server_reads_as_not_recorded() -> None:
    class Old:
        row_index, metric_name, score, passing, feedback, error = 0, "m", 1.0, None, None, None
        prediction, contexts, prediction_cost, query, raw_dataset = None, None, 0, "q", {}

    assert ResultRecord.from_attributes(Old()).details is None
