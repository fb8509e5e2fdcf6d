"""One trace across two processes: a gateway service and the RAG app behind it, each with
its own OpenTelemetry SDK tracer provider and exporter, the trace context passed in a W3C
``traceparent`` header as the SDK's propagator writes and reads it. Each service exports its
own spans, in its own request, in either order; the store links the app's top span under
the gateway's when that arrives, and the trace is complete (scored) before it does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import propagate
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragmeter.config import OnlineConfig
from ragmeter.runs.storage.traces import TraceStore
from ragmeter.store.db import Store
from ragmeter.traces import SpanRecord
from ragmeter.traces.otlp import PROTOBUF, decode_export

QUESTION = "Where is the Louvre?"


class Service:
    """One process: a tracer provider of its own, its spans exported as OTLP protobuf."""

    def __init__(self, name: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": name}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(name)

    def export(self) -> list[SpanRecord]:
        """The request this service's exporter sends, as the receiver decodes it."""
        body = encode_spans(self.exporter.get_finished_spans()).SerializeToString()
        return list(decode_export(body, PROTOBUF, None, OnlineConfig()).spans)


def _rag_app(app: Service, headers: dict[str, str]) -> str:
    """The app handling the request the gateway forwarded: its context read from the
    ``traceparent`` header, a CHAIN span with a retriever and an LLM call inside."""
    context = propagate.extract(headers)
    attributes = {"openinference.span.kind": "CHAIN", "input.value": QUESTION}
    with app.tracer.start_as_current_span("rag", context=context, attributes=attributes) as rag:
        with app.tracer.start_as_current_span("retrieve") as retrieve:
            retrieve.set_attributes(
                {
                    "openinference.span.kind": "RETRIEVER",
                    "retrieval.documents.0.document.id": "louvre",
                    "retrieval.documents.0.document.content": "The Louvre is in Paris.",
                }
            )
        answer = "In Paris."
        rag.set_attribute("output.value", answer)
        return answer


@pytest.fixture
def traces(store_url: str) -> Iterator[TraceStore]:
    store = Store(store_url)
    try:
        yield TraceStore(store)
    finally:
        store.close()


def _two_services() -> tuple[list[SpanRecord], list[SpanRecord]]:
    gateway, app = Service("gateway"), Service("rag-app")
    try:
        with gateway.tracer.start_as_current_span("POST /ask") as edge:
            edge.set_attribute("http.route", "/ask")
            headers: dict[str, str] = {}
            propagate.inject(headers)  # the gateway's HTTP client writes traceparent
            assert headers["traceparent"].startswith("00-")
            _rag_app(app, headers)
        return gateway.export(), app.export()
    finally:
        gateway.provider.shutdown()
        app.provider.shutdown()


@pytest.mark.parametrize("gateway_first", [False, True])
def test_a_trace_across_two_services_is_linked_whichever_arrives_first(
    traces: TraceStore, gateway_first: bool
) -> None:
    from_gateway, from_app = _two_services()
    (edge,) = from_gateway
    rag = next(s for s in from_app if s.name == "rag")
    assert rag.parent_id == edge.span_id and rag.remote_parent  # kept, and known remote
    assert rag.trace_id == edge.trace_id
    traces.add_spans(from_gateway if gateway_first else from_app)
    assert traces.get(rag.trace_id).trace.record.complete  # either alone is a whole trace
    traces.add_spans(from_app if gateway_first else from_gateway)
    found = traces.get(rag.trace_id)
    row = found.trace.record.row
    assert found.trace.record.complete
    # the gateway's root carries no question: the app's top span gives the row
    assert (row["query"], row["response"]) == (QUESTION, "In Paris.")
    assert row["retrieved_ids"] == ["louvre"]
    tree = [(depth, span.name, span.service) for depth, span in found.spans]
    assert tree == [
        (0, "POST /ask", "gateway"),
        (1, "rag", "rag-app"),
        (2, "retrieve", "rag-app"),
    ]
    assert found.trace.record.name == "POST /ask"  # the trace's own root, once it is here
    assert found.trace.record.span_count == 3


def test_the_app_alone_is_a_complete_trace_rooted_at_its_top_span(traces: TraceStore) -> None:
    """A gateway exporting elsewhere (or not at all): its span never arrives; the app's top
    span is the root here, its parent id kept (stored and read back)."""
    _, from_app = _two_services()
    traces.add_spans(from_app)
    found = traces.get(from_app[0].trace_id)
    record: Any = found.trace.record
    assert record.complete and record.name == "rag" and record.service == "rag-app"
    assert record.row["query"] == QUESTION and record.row["retrieved_ids"] == ["louvre"]
    stored = {s.name: s for _, s in found.spans}
    assert stored["rag"].parent_id is not None and stored["rag"].remote_parent
    assert "ragmeter" not in " ".join(stored["rag"].attributes)  # nothing of ours added
    assert [d for d, _ in found.spans] == [0, 1]
