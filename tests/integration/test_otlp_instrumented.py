"""Real instrumentation end to end: apps instrumented with OpenInference's instrumentors
(OpenAI, LangChain) call the scripted judge as their LLM, the real OTLP/HTTP exporter sends
their spans (protobuf, gzip) to a loopback listener, and the captured bodies become rows
through ``decode_export`` and ``trace_of``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider

from ragmeter.datasets.row import row_from_mapping
from ragmeter.testing import ScriptedJudgeServer
from ragmeter.traces import TraceRecord
from ragmeter.traces.conventions import trace_of
from tests.integration.otlp_capture import OtlpCapture, traced

pytestmark = [
    pytest.mark.slow,
    # the LangChain instrumentor calls a LangChain method LangChain has deprecated
    pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated"),
]

QUESTION = "What is the capital of France?"
DOCUMENTS = [
    Document("Paris is the capital of France.", id="doc-7", metadata={"score": 0.91}),
    Document("France is a country in Europe.", id="doc-3", metadata={"score": 0.52}),
    Document("Lyon is a city in France.", id="doc-12", metadata={"score": 0.33}),
]


@pytest.fixture
def otlp() -> Iterator[tuple[TracerProvider, OtlpCapture]]:
    with traced() as pair:
        yield pair


@pytest.fixture
def langchain_traced(otlp: tuple[TracerProvider, OtlpCapture]) -> Iterator[OtlpCapture]:
    provider, capture = otlp
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield capture
    finally:
        instrumentor.uninstrument()


def _one_trace(provider: TracerProvider, capture: OtlpCapture) -> TraceRecord:
    """The single trace the app exported, once the provider flushed it."""
    assert provider.force_flush()
    assert capture.exports, "the exporter sent nothing"
    assert all(e.content_encoding == "gzip" for e in capture.exports)
    assert all(e.content_type == "application/x-protobuf" for e in capture.exports)
    spans = capture.spans()
    assert len({s.trace_id for s in spans}) == 1
    trace = trace_of(spans)
    assert trace.complete
    row_from_mapping(trace.row, 0)  # the row is one ragmeter reads
    return trace


def test_openai_client_call(
    otlp: tuple[TracerProvider, OtlpCapture], judge_server: ScriptedJudgeServer
) -> None:
    provider, capture = otlp
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=judge_server.url, api_key="test-key")
        reply = client.chat.completions.create(
            model="scripted-4o",
            messages=[
                {"role": "system", "content": "You answer in one sentence."},
                {"role": "user", "content": QUESTION},
            ],
        )
    finally:
        instrumentor.uninstrument()
    trace = _one_trace(provider, capture)
    assert reply.usage is not None
    assert trace.row["query"] == QUESTION
    assert trace.row["response"] == reply.choices[0].message.content
    assert trace.row["response"]
    assert trace.model == "scripted-4o"
    assert (trace.input_tokens, trace.output_tokens) == (
        reply.usage.prompt_tokens,
        reply.usage.completion_tokens,
    )
    assert trace.service == "shop-assistant"
    assert trace.row["metadata"]["service"] == "shop-assistant"
    assert [m["role"] for m in trace.row["messages"]] == ["system", "user", "assistant"]
    assert trace.span_count == 1
    assert trace.status in ("ok", "unset")


class ShelfRetriever(BaseRetriever):
    """Returns the documents in a fixed rank order, their ids and scores as a vector store
    would give them."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return list(DOCUMENTS)


def _rag_chain(judge_server: ScriptedJudgeServer) -> Any:
    llm = ChatOpenAI(base_url=judge_server.url, api_key="test-key", model="scripted-rag")
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context only.\n{context}"), ("human", "{question}")]
    )

    def joined(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    retrieve = ShelfRetriever() | RunnableLambda(joined)
    return (
        {"context": retrieve, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()
    )


def test_langchain_retrieval_pipeline(
    langchain_traced: OtlpCapture,
    otlp: tuple[TracerProvider, OtlpCapture],
    judge_server: ScriptedJudgeServer,
) -> None:
    answer = _rag_chain(judge_server).invoke(QUESTION)
    trace = _one_trace(otlp[0], langchain_traced)
    row = trace.row
    assert row["query"] == QUESTION
    assert row["response"] == answer
    assert row["retrieved_ids"] == ["doc-7", "doc-3", "doc-12"]
    assert row["retrieved_contexts"] == [d.page_content for d in DOCUMENTS]
    assert row["metadata"]["document_scores"] == [0.91, 0.52, 0.33]
    assert trace.model == "scripted-rag"
    assert trace.input_tokens and trace.output_tokens
    assert trace.name == "RunnableSequence"
    assert trace.span_count > 5


def test_langchain_chain_answering_a_json_object(
    langchain_traced: OtlpCapture,
    otlp: tuple[TracerProvider, OtlpCapture],
    judge_server: ScriptedJudgeServer,
) -> None:
    """A chain whose output is an object (the answer, cited, nested with its sources, as
    many apps return it): the response is the app's answer, not the model's uncited one."""

    def with_sources(answer: str) -> dict[str, Any]:
        cited = f"{answer} [{DOCUMENTS[0].id}]"
        return {"answer": {"text": cited, "sources": [d.id for d in DOCUMENTS]}}

    chain = _rag_chain(judge_server) | RunnableLambda(with_sources)
    out = chain.invoke(QUESTION)
    trace = _one_trace(otlp[0], langchain_traced)
    assert trace.row["query"] == QUESTION
    assert trace.row["response"] == out["answer"]["text"]
    assert trace.row["retrieved_ids"] == ["doc-7", "doc-3", "doc-12"]


@tool
def get_weather(city: str) -> str:
    """The weather of a city today."""
    return f"rainy in {city}, 12 degrees"


def test_tool_calling_agent_step(
    langchain_traced: OtlpCapture,
    otlp: tuple[TracerProvider, OtlpCapture],
    judge_server: ScriptedJudgeServer,
) -> None:
    """One agent step: the model asks for a tool, the tool runs (a TOOL span), the model
    answers from its result; the conversation keeps the call and the result tied by id."""
    llm = ChatOpenAI(base_url=judge_server.url, api_key="test-key", model="scripted-agent")
    with_tools = llm.bind_tools([get_weather])

    def agent(question: str) -> str:
        history: list[Any] = [HumanMessage(question)]
        asked = with_tools.invoke(history)
        history.append(asked)
        for call in asked.tool_calls:
            result = get_weather.invoke(call)  # a ToolCall in, a ToolMessage out
            assert isinstance(result, ToolMessage)
            history.append(result)
        return str(with_tools.invoke(history).content)

    answer = RunnableLambda(agent).invoke("What is the weather in Paris today?")
    trace = _one_trace(otlp[0], langchain_traced)
    row = trace.row
    assert row["query"] == "What is the weather in Paris today?"
    assert row["response"] == answer == "rainy in Paris, 12 degrees"
    messages = row["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    (call,) = messages[1]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert call["function"]["arguments"] == '{"city": "Paris"}'
    assert messages[2]["tool_call_id"] == call["id"]
    assert messages[2]["content"] == "rainy in Paris, 12 degrees"
    spans = langchain_traced.spans()
    assert [s.kind for s in spans].count("TOOL") == 1
    # without the LLM spans' messages the conversation comes from the tool span alone
    no_llm = trace_of([s for s in spans if s.kind != "LLM"])
    row_from_mapping(no_llm.row, 0)
    assert no_llm.row["messages"] == [
        {"role": "user", "content": "What is the weather in Paris today?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '"Paris"'},
                    "id": call["id"],
                }
            ],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": "rainy in Paris, 12 degrees"},
        {"role": "assistant", "content": "rainy in Paris, 12 degrees"},
    ]
