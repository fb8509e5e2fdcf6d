"""Traces into rows: spans made with the real OpenTelemetry SDK (GenAI conventions, the
OpenInference attributes an app or framework writes), exported with the SDK's own OTLP
encoder, decoded, then summed up by ``trace_of``. Every row must be one ragmeter reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from ragmeter.config import OnlineConfig
from ragmeter.datasets.row import row_from_mapping
from ragmeter.errors import ConfigError
from ragmeter.traces import SpanRecord, TraceRecord
from ragmeter.traces.conventions import trace_of
from ragmeter.traces.otlp import decode_export

QUESTION = "What is the weather in Paris?"


def exported(build: Callable[[Any], None], service: str = "weather-bot") -> list[SpanRecord]:
    """The spans ``build`` makes with an SDK tracer, through the OTLP protobuf encoding."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        build(provider.get_tracer("tests"))
    finally:
        provider.shutdown()
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    return list(decode_export(body, "application/x-protobuf", None, OnlineConfig()).spans)


def checked(trace: TraceRecord) -> dict[str, Any]:
    row_from_mapping(trace.row, 0)
    return trace.row


def genai_agent(tracer: Any) -> None:
    """An agent in today's GenAI conventions: chat (asks for a tool), execute_tool, a
    retrieval, chat (answers); the messages as JSON text of typed parts."""
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-9"}
    with tracer.start_as_current_span("invoke_agent weather", attributes=attrs):
        user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
        call = {
            "type": "tool_call",
            "id": "call_a",
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        }
        asked = {"role": "assistant", "parts": [call], "finish_reason": "tool_call"}
        with tracer.start_as_current_span("chat m1") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m1",
                    "gen_ai.response.model": "m1-2026",
                    "gen_ai.usage.input_tokens": 30,
                    "gen_ai.usage.output_tokens": 8,
                    "gen_ai.system_instructions": json.dumps(
                        [{"type": "text", "content": "Be brief."}]
                    ),
                    "gen_ai.input.messages": json.dumps([user]),
                    "gen_ai.output.messages": json.dumps([asked]),
                }
            )
        with tracer.start_as_current_span("execute_tool get_weather") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "call_a",
                    "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                    "gen_ai.tool.call.result": "rain, 12 C",
                }
            )
        docs = [
            {"id": "w-1", "score": 0.9, "content": "Paris: rain"},
            {"id": "w-2", "score": 0.4, "content": "Lyon: sun"},
        ]
        with tracer.start_as_current_span("retrieval forecasts") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "retrieval",
                    "gen_ai.data_source.id": "forecasts",
                    "gen_ai.retrieval.query.text": "Paris weather",
                    "gen_ai.retrieval.documents": json.dumps(docs),
                }
            )
        result = {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_a", "response": "rain, 12 C"}],
        }
        answer = {"role": "assistant", "parts": [{"type": "text", "content": "Rainy, 12 C."}]}
        with tracer.start_as_current_span("chat m1") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m1",
                    "gen_ai.response.model": "m1-2026",
                    "gen_ai.usage.input_tokens": 50,
                    "gen_ai.usage.output_tokens": 5,
                    "gen_ai.system_instructions": json.dumps(
                        [{"type": "text", "content": "Be brief."}]
                    ),
                    "gen_ai.input.messages": json.dumps([user, asked, result]),
                    "gen_ai.output.messages": json.dumps([answer]),
                }
            )


def test_genai_agent() -> None:
    trace = trace_of(exported(genai_agent))
    row = checked(trace)
    assert row["query"] == QUESTION
    assert row["response"] == "Rainy, 12 C."
    assert row["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    "id": "call_a",
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "rain, 12 C"},
        {"role": "assistant", "content": "Rainy, 12 C."},
    ]
    assert row["retrieved_ids"] == ["w-1", "w-2"]
    assert row["retrieved_contexts"] == ["Paris: rain", "Lyon: sun"]
    assert (trace.input_tokens, trace.output_tokens) == (80, 13)
    assert trace.model == "m1-2026"
    assert trace.session_id == "conv-9"
    assert trace.name == "invoke_agent weather"
    assert trace.complete
    assert trace.span_count == 5
    meta = row["metadata"]
    assert meta["document_scores"] == [0.9, 0.4]
    assert meta["data_source"] == "forecasts"
    assert meta["service"] == "weather-bot"
    assert (meta["input_tokens"], meta["output_tokens"], meta["session_id"]) == (80, 13, "conv-9")
    assert meta["latency_ms"] == trace.latency_ms


def test_genai_older_flattened_prompt_and_completion() -> None:
    """OpenLLMetry's flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` and the
    older token names."""

    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("openai.chat") as span:
            span.set_attributes(
                {
                    "gen_ai.system": "openai",
                    "gen_ai.request.model": "gpt-x",
                    "gen_ai.usage.prompt_tokens": 11,
                    "gen_ai.usage.completion_tokens": 4,
                    "gen_ai.prompt.0.role": "system",
                    "gen_ai.prompt.0.content": "Be brief.",
                    "gen_ai.prompt.1.role": "user",
                    "gen_ai.prompt.1.content": QUESTION,
                    "gen_ai.completion.0.role": "assistant",
                    "gen_ai.completion.0.content": "",
                    "gen_ai.completion.0.tool_calls.0.id": "c1",
                    "gen_ai.completion.0.tool_calls.0.name": "get_weather",
                    "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
                }
            )

    trace = trace_of(exported(build))
    row = checked(trace)
    assert row["query"] == QUESTION
    assert "response" not in row  # the model only asked for a tool
    assert row["messages"][-1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert (trace.input_tokens, trace.output_tokens, trace.model) == (11, 4, "gpt-x")


def test_genai_message_events() -> None:
    """The ``gen_ai.*.message`` and ``gen_ai.choice`` span events, and the older
    ``gen_ai.content.prompt`` / ``completion`` events with JSON messages."""

    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("chat a") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.add_event("gen_ai.system.message", {"content": "Be brief."})
            span.add_event(
                "gen_ai.user.message", {"gen_ai.event.content": json.dumps({"content": QUESTION})}
            )
            span.add_event(
                "gen_ai.choice",
                {
                    "gen_ai.event.content": json.dumps(
                        {"index": 0, "message": {"content": "Rainy."}}
                    )
                },
            )
        with tracer.start_as_current_span("chat b") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.add_event(
                "gen_ai.content.prompt",
                {"gen_ai.prompt": json.dumps([{"role": "user", "content": "And Lyon?"}])},
            )
            span.add_event(
                "gen_ai.content.completion",
                {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "Sunny."}])},
            )

    spans = exported(build)
    first = trace_of([s for s in spans if s.name == "chat a"])
    assert checked(first)["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Rainy."},
    ]
    second = trace_of([s for s in spans if s.name == "chat b"])
    assert (second.row["query"], second.row["response"]) == ("And Lyon?", "Sunny.")


def openinference_rag(tracer: Any) -> None:
    """A RAG chain as an app writes it by hand in OpenInference attributes: a reranker after
    the retriever, an agent span totalling the tokens of the LLM call inside it."""
    root_attrs = {
        "openinference.span.kind": "CHAIN",
        "input.value": json.dumps({"question": QUESTION}),
        "input.mime_type": "application/json",
        "output.value": "It rains.",
        "session.id": "s-1",
        "user.id": "u-7",
        "metadata": json.dumps({"reference": "Rain, 12 C.", "release": "v3"}),
    }
    with tracer.start_as_current_span("rag", attributes=root_attrs):
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attributes(
                {
                    "openinference.span.kind": "RETRIEVER",
                    "input.value": QUESTION,
                    **{f"retrieval.documents.{n}.document.id": f"d{n}" for n in range(3)},
                    **{f"retrieval.documents.{n}.document.content": f"text {n}" for n in range(3)},
                    **{f"retrieval.documents.{n}.document.score": 1 - n / 10 for n in range(3)},
                }
            )
        with tracer.start_as_current_span("rerank") as span:
            span.set_attributes(
                {
                    "openinference.span.kind": "RERANKER",
                    "reranker.output_documents.0.document.id": "d2",
                    "reranker.output_documents.0.document.content": "text 2",
                    "reranker.output_documents.0.document.score": 0.99,
                    "reranker.output_documents.1.document.id": "d0",
                    "reranker.output_documents.1.document.content": "text 0",
                }
            )
        totals = {
            "openinference.span.kind": "AGENT",
            "llm.token_count.prompt": 40,
            "llm.token_count.completion": 6,
        }
        with (
            tracer.start_as_current_span("answer", attributes=totals),
            tracer.start_as_current_span("llm") as span,
        ):
            span.set_attributes(
                {
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "m2",
                    "llm.token_count.prompt": 40,
                    "llm.token_count.completion": 6,
                    "llm.token_count.total": 46,
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.contents.0.message_content.type": "text",
                    "llm.input_messages.0.message.contents.0.message_content.text": QUESTION,
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "It rains.",
                }
            )
            span.set_status(Status(StatusCode.ERROR, "slow"))


def test_openinference_rag_with_reranker_and_totals() -> None:
    trace = trace_of(exported(openinference_rag))
    row = checked(trace)
    assert row["query"] == QUESTION  # from the root's JSON input
    assert row["response"] == "It rains."
    assert row["retrieved_ids"] == ["d2", "d0"]  # the reranker's order
    assert row["retrieved_contexts"] == ["text 2", "text 0"]
    assert row["metadata"]["document_scores"] == [0.99, None]
    assert row["reference"] == "Rain, 12 C."
    assert row["metadata"]["app"] == {"reference": "Rain, 12 C.", "release": "v3"}
    assert row["messages"] == [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "It rains."},
    ]
    assert (trace.input_tokens, trace.output_tokens) == (40, 6)  # the agent's total not added
    assert (trace.session_id, trace.user_id, trace.model) == ("s-1", "u-7", "m2")
    assert trace.status == "error"


def test_the_root_arriving_last() -> None:
    spans = exported(openinference_rag)
    root = next(s for s in spans if s.parent_id is None)
    early = trace_of([s for s in spans if s is not root])
    assert not early.complete
    assert early.name == ""
    assert early.row["query"] == QUESTION  # the LLM call's user message until the root comes
    later = trace_of([*spans, *spans])  # a span sent twice counts once
    assert later.complete
    assert later.name == "rag"
    assert later.span_count == len(spans) == early.span_count + 1


def test_reference_attribute_and_tool_spans_without_llm_messages() -> None:
    """A hand-made trace: tool spans only, the query and answer on the root, the reference
    in ``ragmeter.reference``."""

    def build(tracer: Any) -> None:
        attrs = {
            "input.value": "Convert 3 km to miles",
            "output.value": "1.86 miles",
            "ragmeter.reference": "1.864 miles",
        }
        with tracer.start_as_current_span("task", attributes=attrs):
            tool = {
                "openinference.span.kind": "TOOL",
                "tool.name": "convert",
                "input.value": '{"km": 3}',
                "output.value": "1.864",
            }
            with tracer.start_as_current_span("convert", attributes=tool):
                pass

    row = checked(trace_of(exported(build)))
    assert row["reference"] == "1.864 miles"
    assert row["messages"] == [
        {"role": "user", "content": "Convert 3 km to miles"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "convert", "arguments": '{"km": 3}'},
                    "id": "call_0",
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "1.864"},
        {"role": "assistant", "content": "1.86 miles"},
    ]


def test_a_tool_result_for_no_call_is_left_out() -> None:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("llm") as span:
            span.set_attributes(
                {
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.role": "tool",
                    "llm.input_messages.0.message.tool_call_id": "ghost",
                    "llm.input_messages.0.message.content": "orphan",
                    "llm.input_messages.1.message.role": "user",
                    "llm.input_messages.1.message.content": "hi",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "hello",
                }
            )

    row = checked(trace_of(exported(build)))
    assert [m["role"] for m in row["messages"]] == ["user", "assistant"]


def test_no_spans() -> None:
    with pytest.raises(ConfigError, match="at least one span"):
        trace_of([])


def test_broken_tool_arguments_are_kept_as_text() -> None:
    """A model's broken JSON arguments stay readable: kept whole as a JSON string."""

    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("llm") as span:
            span.set_attributes(
                {
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": QUESTION,
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Par',
                }
            )

    row = checked(trace_of(exported(build)))
    (call,) = row["messages"][-1]["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == '{"city": "Par'


def _root_with_output(output: Any, input_value: Any = QUESTION, llm: bool = False) -> TraceRecord:
    """A CHAIN root whose ``output.value`` (and ``input.value``) is JSON text of ``output``,
    with an LLM call inside it answering "from the model" when ``llm``."""

    def build(tracer: Any) -> None:
        attrs = {
            "openinference.span.kind": "CHAIN",
            "input.value": input_value if isinstance(input_value, str) else json.dumps(input_value),
            "input.mime_type": "application/json",
            "output.value": json.dumps(output),
            "output.mime_type": "application/json",
        }
        with tracer.start_as_current_span("app", attributes=attrs):
            if llm:
                with tracer.start_as_current_span("llm") as span:
                    span.set_attributes(
                        {
                            "openinference.span.kind": "LLM",
                            "llm.input_messages.0.message.role": "user",
                            "llm.input_messages.0.message.content": QUESTION,
                            "llm.output_messages.0.message.role": "assistant",
                            "llm.output_messages.0.message.content": "from the model",
                        }
                    )

    return trace_of(exported(build))


@pytest.mark.parametrize(
    ("output", "response"),
    [
        ({"result": "Rainy."}, "Rainy."),  # a known key holding text
        ({"answer": {"text": "Rainy.", "sources": ["s1"]}}, "Rainy."),  # a known key, nested
        ({"output": {"answer": {"content": "Rainy."}}}, "Rainy."),  # nested twice
        ({"verdict": "Rainy.", "confidence": 0.9}, "Rainy."),  # the single text field
    ],
)
def test_a_json_output_gives_its_answer(output: dict[str, Any], response: str) -> None:
    assert checked(_root_with_output(output))["response"] == response


def test_a_json_output_of_no_known_shape_falls_back_to_the_model_then_to_its_text() -> None:
    """Two text fields and no known key: the last LLM call's answer when there is one,
    else the JSON text itself (so the trace still has a response to score)."""
    output = {"city": "Paris", "forecast": "Rainy."}
    assert checked(_root_with_output(output, llm=True))["response"] == "from the model"
    assert checked(_root_with_output(output))["response"] == json.dumps(output)
    assert checked(_root_with_output([1, 2]))["response"] == "[1, 2]"


def test_a_json_input_reads_like_an_output() -> None:
    """The query by the same rule: a known key (nested too), the single text field, else the
    first LLM call's user message, else the JSON text itself."""
    nested = {"input": {"question": QUESTION, "k": 3}}
    assert checked(_root_with_output("x", nested))["query"] == QUESTION
    assert checked(_root_with_output("x", {"ask": QUESTION, "k": 3}))["query"] == QUESTION
    two = {"city": "Paris", "when": "today"}
    assert checked(_root_with_output("x", two, llm=True))["query"] == QUESTION
    assert checked(_root_with_output("x", two))["query"] == json.dumps(two)
