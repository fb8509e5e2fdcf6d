"""Reference-free metrics where production rows have no reference: through the real
``ragmeter`` command (``eval``, ``metrics``), and through an online rule scoring what traces
become: spans made with the OpenTelemetry SDK in OpenInference attributes, exported with the
SDK's OTLP encoder, decoded, summed up by ``trace_of`` and scored by ``score_traces``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import OnlineRule, Settings
from ragmeter.runs.online import score_traces
from ragmeter.traces import TraceScore
from ragmeter.traces.conventions import trace_of
from tests.integration.helpers import json_lines, run
from tests.unit.test_trace_conventions import exported

METRICS = ("answered", "json_response", "retrieved_any", "lexical_grounding")


def test_eval_scores_rows_without_any_reference(tmp_path: Path) -> None:
    rows = [
        {
            "query": "How long do refunds take?",
            "response": "The refunds are processed within 30 days.",
            "retrieved_ids": ["kb-7"],
            "retrieved_contexts": ["Refunds are processed in 5 business days by the finance team."],
        },
        {
            "query": "退款多久可以申请？",
            "response": '{"答案": "退款需要在30天内申请"}',
            "retrieved_contexts": ["退款在收到商品后30天内可以申请。"],
        },
        {"query": "Where is my order?", "response": " ... ", "retrieved_contexts": []},
    ]
    path = tmp_path / "prod.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    done = run("eval", str(path), "-m", ",".join(METRICS), "--out", str(out), home=tmp_path)
    assert done.returncode == 0, done.stderr
    found = {(r["row_index"], r["metric_name"]): r for r in json_lines(out.read_text("utf-8"))}
    score = {key: r["score"] for key, r in found.items()}
    assert [score[i, "answered"] for i in range(3)] == [1, 1, 0]
    assert [score[i, "json_response"] for i in range(3)] == [0, 1, 0]
    assert [score[i, "retrieved_any"] for i in range(3)] == [1, 1, 0]
    # by hand: refund, process, day of refund, process, within, 30, day; then the Chinese
    # row's words 答案 退款 需要 30 天 内 申请, all but 答案 and 需要 in the context
    assert score[0, "lexical_grounding"] == pytest.approx(3 / 5)
    assert score[1, "lexical_grounding"] == pytest.approx(5 / 7)
    assert score[2, "lexical_grounding"] is None
    assert found[2, "lexical_grounding"]["error"] == (
        "the row retrieved no contexts (field 'retrieved_contexts' is empty)"
    )
    assert found[2, "lexical_grounding"]["error_kind"] == "input"
    assert "1 result(s) have no score" in done.stdout


def test_a_reference_based_metric_refuses_the_same_rows(tmp_path: Path) -> None:
    path = tmp_path / "prod.jsonl"
    path.write_text(json.dumps({"query": "q", "response": "a", "retrieved_ids": ["x"]}) + "\n")
    done = run("eval", str(path), "-m", "num_ret", home=tmp_path)
    assert done.returncode == 2
    assert (
        "'num_ret' needs" in done.stderr and "reference_ids or reference_relevance" in done.stderr
    )


def test_metrics_lists_them() -> None:
    done = run("metrics")
    assert done.returncode == 0, done.stderr
    for name in (*METRICS, "LexicalGroundingMetric", "not faithfulness"):
        assert name in done.stdout


def rag(answer: str, documents: list[str], by_llm: bool = False) -> Callable[[Any], None]:
    """A RAG chain in OpenInference attributes: a root CHAIN answering ``answer`` (or, with
    ``by_llm``, an LLM span inside it) after a RETRIEVER span that returned ``documents``
    (none: the retriever found nothing)."""

    def build(tracer: Any) -> None:
        question = "How long do refunds take?"
        root = {
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": question}),
        }
        with tracer.start_as_current_span("rag", attributes=root) as chain:
            with tracer.start_as_current_span("retrieve") as span:
                span.set_attributes(
                    {
                        "openinference.span.kind": "RETRIEVER",
                        "input.value": "refunds",
                        **{
                            f"retrieval.documents.{n}.document.{key}": value
                            for n, text in enumerate(documents)
                            for key, value in (("id", f"kb-{n}"), ("content", text))
                        },
                    }
                )
            if not by_llm:
                chain.set_attribute("output.value", answer)
                return
            with tracer.start_as_current_span("llm") as span:
                span.set_attributes(
                    {
                        "openinference.span.kind": "LLM",
                        "llm.input_messages.0.message.role": "user",
                        "llm.input_messages.0.message.content": question,
                        "llm.output_messages.0.message.role": "assistant",
                        "llm.output_messages.0.message.content": answer,
                    }
                )

    return build


@pytest.mark.both_stores
def test_an_online_rule_scores_every_trace_with_no_reference(store_url: str) -> None:
    refunds = "Refunds are processed in 5 business days by the finance team."
    traces = [
        trace_of(exported(rag("Refunds are processed in 5 business days.", [refunds]))),
        trace_of(exported(rag('{"days": 7}', [refunds, "Returns need a receipt."], by_llm=True))),
        trace_of(exported(rag("?", []))),
    ]
    assert all("reference" not in t.row for t in traces)
    assert "retrieved_contexts" not in traces[2].row  # a retriever that found nothing
    rule = OnlineRule(name="prod-health", metrics=METRICS)  # no judge: deterministic only
    settings = Settings.model_validate({"store": {"url": store_url}})
    scores = score_traces(traces, [rule], settings)
    by: dict[tuple[int, str], TraceScore] = {
        (next(i for i, t in enumerate(traces) if t.trace_id == s.trace_id), s.metric): s
        for s in scores
    }
    assert len(by) == 3 * len(METRICS)
    assert all(s.rule == "prod-health" and s.judge_model is None for s in scores)
    assert [by[i, "answered"].score for i in range(3)] == [1, 1, 0]
    assert [by[i, "json_response"].score for i in range(3)] == [0, 1, 0]
    assert [by[i, "retrieved_any"].score for i in range(3)] == [1, 1, 0]
    assert by[0, "lexical_grounding"].score == 1.0  # every word is the context's
    assert by[1, "lexical_grounding"].score == 0.5  # day (of "days") is there, 7 is not
    assert by[1, "lexical_grounding"].feedback == "1 of 2 words not in the contexts: 7"
    missing = by[2, "lexical_grounding"]
    assert missing.score is None and missing.error_kind == "input"
    assert missing.reason == (
        "metric 'lexical_grounding' needs retrieved_contexts, which this trace lacks"
    )
    assert by[0, "answered"].passing is True and by[2, "answered"].passing is False
