"""OTLP/HTTP trace export bodies as exporters send them (``opentelemetry-proto``'s messages,
protobuf or OTLP JSON with hex ids, gzip or not), and a running server's traces read back."""

from __future__ import annotations

import base64
import gzip
import json
import time
from typing import Any

import httpx
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
NOW = time.time_ns()


def tid(n: int) -> str:
    return f"{n:032x}"


def sid(n: int) -> str:
    return f"{n:016x}"


def span(
    trace: int,
    span_no: int,
    parent: int | None = None,
    *,
    query: str | None = None,
    attributes: dict[str, str] | None = None,
    start: int = NOW,
) -> Span:
    """A span of trace ``trace``; a root (no ``parent``) with ``query`` carries it and its
    answer as OpenInference's ``input.value`` / ``output.value``."""
    given = dict(attributes or {})
    given["openinference.span.kind"] = "CHAIN" if parent is None else "LLM"
    if query is not None:
        given |= {"input.value": query, "output.value": f"answer to {query}"}
    return Span(
        trace_id=bytes.fromhex(tid(trace)),
        span_id=bytes.fromhex(sid(span_no)),
        parent_span_id=b"" if parent is None else bytes.fromhex(sid(parent)),
        name="chat" if parent is None else f"step {span_no}",
        kind=Span.SPAN_KIND_SERVER if parent is None else Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start + span_no * 1000,
        end_time_unix_nano=start + span_no * 1000 + 500_000,
        attributes=[KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in given.items()],
    )


def export(spans: list[Span], service: str = "shop") -> ExportTraceServiceRequest:
    resource = Resource(
        attributes=[KeyValue(key="service.name", value=AnyValue(string_value=service))]
    )
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=spans)])]
    )


def as_json(request: ExportTraceServiceRequest) -> bytes:
    """OTLP JSON: proto3 JSON, but trace and span ids in hex (not base64)."""
    raw: dict[str, Any] = json_format.MessageToDict(request)
    for resource_spans in raw.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for item in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in item:
                        item[key] = base64.b64decode(item[key]).hex()
    return json.dumps(raw).encode()


def post(
    http: httpx.Client,
    request: ExportTraceServiceRequest,
    *,
    media: str = PROTOBUF,
    gzipped: bool = False,
) -> httpx.Response:
    """POST ``request`` to ``/v1/traces`` as an exporter does."""
    body = request.SerializeToString() if media == PROTOBUF else as_json(request)
    headers = {"Content-Type": media}
    if gzipped:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return http.post("/v1/traces", content=body, headers=headers)


def _answer(response: httpx.Response) -> ExportTraceServiceResponse:
    answer = ExportTraceServiceResponse()
    if response.headers["content-type"].startswith(PROTOBUF):
        answer.ParseFromString(response.content)
    else:
        json_format.Parse(response.content or b"{}", answer)
    return answer


def rejected(response: httpx.Response) -> int:
    """``partial_success.rejected_spans`` of an export's answer (0: all kept)."""
    return int(_answer(response).partial_success.rejected_spans)


def message(response: httpx.Response) -> str:
    """``partial_success.error_message`` of an export's answer ("" when all were kept)."""
    return str(_answer(response).partial_success.error_message)


def traces(http: httpx.Client, want: int, timeout: float = 30, **query: Any) -> list[Any]:
    """``GET /api/v2/serve/traces`` once it lists ``want`` traces (spans are stored in the
    background)."""
    deadline = time.monotonic() + timeout
    while True:
        body = http.get("/api/v2/serve/traces", params=query).json()
        assert body["success"], body
        if body["data"]["total"] >= want or time.monotonic() > deadline:
            items: list[Any] = body["data"]["items"]
            return items
        time.sleep(0.1)
