"""Production traffic end to end, as a team runs it: a LangChain retrieval app instrumented
with OpenInference's instrumentor (the scripted judge as its LLM) exports its traces with the
real OTLP/HTTP exporter to ``ragmeter serve`` under an ``ingest`` key; an online rule of
ragmeter.toml scores them with the judge in the background; the monitor shows the metric
over time; a quality drop (the app starts answering off its documents) fires an alert to a
webhook on 127.0.0.1 once; and the low-scored traces become a dataset version. An app
instrumented on the openai client sends its calls the same way."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_openai import ChatOpenAI
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.roles import add_user, as_user
from tests.integration.service import KEY, ServiceProcess, data
from tests.security.listener import Listener

pytestmark = [
    pytest.mark.both_stores,
    pytest.mark.slow,
    # the LangChain instrumentor calls a LangChain method LangChain has deprecated
    pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated"),
]

V2 = "/api/v2/serve"
GOOD, BAD = 24, 36
ALERT = "faithfulness.mean < 0.6 over 1h with n >= 20"
CITIES = ["Paris", "Lyon", "Nice", "Lille", "Nantes", "Toulouse"]


class Shelf(BaseRetriever):
    """Two documents about the question's city, with ids and scores as a vector store gives."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        city = next((c for c in CITIES if c in query), "Paris")
        return [
            Document(
                f"{city} has a museum of modern art.", id=f"{city}-1", metadata={"score": 0.9}
            ),
            Document(f"{city} lies in France.", id=f"{city}-2", metadata={"score": 0.4}),
        ]


def _app(judge: ScriptedJudgeServer, broken: Callable[[], bool]) -> Any:
    """The team's RAG chain; once ``broken()``, its answers leave the documents behind (the
    injected quality drop: a prompt change that makes the model answer from elsewhere)."""
    llm = ChatOpenAI(base_url=judge.url, api_key="app-key", model="scripted-rag")
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer from the context only.\nContext:\n{context}"),
            ("human", "Question: {question}"),
        ]
    )

    def joined(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    def answer(text: str) -> str:
        return "Refunds take five working days by bank transfer." if broken() else text

    retrieve = Shelf() | RunnableLambda(joined)
    return (
        {"context": retrieve, "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
        | RunnableLambda(answer)
    )


@pytest.fixture
def served(
    tmp_path: Path, store_kind: str, judge_server: ScriptedJudgeServer
) -> Iterator[tuple[ServiceProcess, str]]:
    home = tmp_path / "production"
    home.mkdir()
    settings = f"""
[models.judge]
base_url = "{judge_server.url}"
model = "scripted"

[online]
score_every_seconds = 0.2
alert_every_seconds = 1
allow_webhook_hosts = ["127.0.0.1/32"]

[[online.rules]]
name = "rag-quality"
service = "shop-rag"
metrics = ["faithfulness"]
judge = "judge"
delay_seconds = 0
"""
    (home / "ragmeter.toml").write_text(settings, encoding="utf-8")
    ingest = add_user(home, "shop-rag", "ingest")
    server = ServiceProcess(home).start()
    try:
        yield server, ingest
    finally:
        server.stop()


def _wait(until: Callable[[], bool], what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if until():
            return
        time.sleep(0.2)
    raise AssertionError(f"waited {seconds:g} s for {what}")


def _scored(admin: Any, count: int) -> Callable[[], bool]:
    def done() -> bool:
        page = data(admin.get(f"{V2}/traces", params={"limit": 200}))
        scored = [t for t in page["items"] if t["scores"]]
        return page["total"] >= count and len(scored) >= count

    return done


def test_an_instrumented_app_is_scored_monitored_alerted_on_and_saved_as_a_dataset(
    served: tuple[ServiceProcess, str], judge_server: ScriptedJudgeServer
) -> None:
    server, ingest = served
    broken = False
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces",
        headers={"Authorization": f"Bearer {ingest}"},
        compression=Compression.Gzip,
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-rag"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    app = _app(judge_server, lambda: broken)
    try:
        with Listener() as hook, as_user(server, KEY) as admin:
            made = {"name": "quality", "expression": ALERT, "webhook_url": hook.url("/ask?prod")}
            data(admin.post(f"{V2}/online/alerts", json=made), 201)
            for i in range(GOOD):
                app.invoke(f"What is there to see in {CITIES[i % len(CITIES)]}, visit {i}?")
            assert provider.force_flush()
            _wait(_scored(admin, GOOD), "the good traces to be scored")
            time.sleep(2.5)  # the alert loop looks every second: nothing to say yet
            assert not [s for s in hook.seen if s.path == "/ask?prod"]
            first = data(admin.get(f"{V2}/traces", params={"limit": 1}))["items"][0]
            assert first["row"]["retrieved_ids"][0].endswith("-1") and first["model"]
            (score,) = first["scores"]
            assert (score["metric"], score["rule"], score["score"]) == (
                "faithfulness", "rag-quality", 1.0,
            )  # fmt: skip

            broken = True  # the injected quality drop
            for i in range(BAD):
                app.invoke(f"What is there to see in {CITIES[i % len(CITIES)]}, trip {i}?")
            assert provider.force_flush()
            _wait(_scored(admin, GOOD + BAD), "the broken traces to be scored")
            posts = lambda: [s for s in hook.seen if s.path == "/ask?prod"]  # noqa: E731
            _wait(lambda: bool(posts()), "the alert to fire", seconds=30)
            time.sleep(3)  # three more looks of the alert loop: the episode posts once
            assert len(posts()) == 1
            (event,) = data(admin.get(f"{V2}/online/alert-events", params={"rule": "quality"}))
            assert event["fired_delivery"] == "sent: HTTP 200" and event["resolved_at"] is None
            assert event["n"] == GOOD + BAD

            shown = data(
                admin.get(f"{V2}/online/monitor", params={"metric": "faithfulness", "window": "1h"})
            )
            (metric,) = shown["metrics"]
            assert sum(b["n"] for b in metric["buckets"]) == GOOD + BAD
            mean = sum(b["mean"] * b["n"] for b in metric["buckets"]) / (GOOD + BAD)
            assert mean == pytest.approx(GOOD / (GOOD + BAD), abs=0.05)

            rules = data(admin.get(f"{V2}/online/rules"))
            (rule,) = rules
            assert rule["traces_scored"] == GOOD + BAD and rule["requests_today"] > 0

            low = {"name": "prod-misses", "filters": {"metric": "faithfulness", "below": 0.5}}
            saved = data(admin.post(f"{V2}/traces/dataset", json=low), 201)
            assert saved["rows"] == BAD and saved["version"] == 1
            listed = data(admin.get(f"{V2}/datasets"))["items"]
            assert "prod-misses" in {d["name"] for d in listed}
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def test_an_app_instrumented_on_the_openai_client_sends_its_calls(
    served: tuple[ServiceProcess, str], judge_server: ScriptedJudgeServer
) -> None:
    """The OpenAI instrumentor's spans, from an app calling the scripted judge as its LLM,
    reach the server under the ingest key and read back with model and tokens."""
    server, ingest = served
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {ingest}"}
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=judge_server.url, api_key="app-key")
        question = "Question: Where is Lyon?\nContext:\nLyon lies in France."
        reply = client.chat.completions.create(
            model="scripted-4o", messages=[{"role": "user", "content": question}]
        )
        assert provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    with as_user(server, KEY) as admin:
        _wait(
            lambda: data(admin.get(f"{V2}/traces", params={"service": "support-bot"}))["total"],
            "the call's trace",
        )
        (trace,) = data(admin.get(f"{V2}/traces", params={"service": "support-bot"}))["items"]
    assert reply.usage is not None and reply.choices[0].message.content
    assert trace["complete"] and trace["model"] == "scripted-4o"
    assert trace["row"]["query"] == question
    assert trace["row"]["response"] == reply.choices[0].message.content
    assert (trace["input_tokens"], trace["output_tokens"]) == (
        reply.usage.prompt_tokens, reply.usage.completion_tokens,
    )  # fmt: skip
