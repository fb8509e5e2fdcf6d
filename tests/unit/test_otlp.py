"""Decoding OTLP/HTTP trace exports: bodies made by the real OpenTelemetry SDK and its own
encoder (protobuf), OTLP JSON as the specification writes it, compression, and every cap at
and past its limit."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from ragmeter.config import OnlineConfig
from ragmeter.errors import LimitError, TraceError
from ragmeter.traces.otlp import decode_export, encode_response, encode_status

PB = "application/x-protobuf"
DEFAULT = OnlineConfig()


def sdk_spans(build: Callable[[Any], None], service: str = "checkout") -> list[ReadableSpan]:
    """The spans ``build`` makes with a real SDK tracer (its own provider, shut down)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        build(provider.get_tracer("tests"))
        return list(exporter.get_finished_spans())
    finally:
        provider.shutdown()


def a_chain(tracer: Any) -> None:
    with tracer.start_as_current_span(
        "rag", kind=SpanKind.SERVER, attributes={"openinference.span.kind": "CHAIN"}
    ) as root:
        root.set_attribute("input.value", "Where is Paris?")
        root.add_event("cache miss", {"store": "redis", "tries": 2})
        with tracer.start_as_current_span("chat gpt-x", kind=SpanKind.CLIENT) as child:
            child.set_attribute("gen_ai.operation.name", "chat")
            child.set_attribute("gen_ai.usage.input_tokens", 12)
            child.set_attribute("temperature", 0.5)
            child.set_attribute("stream", False)
            child.set_attribute("stop", ["\n", "END"])
            child.set_status(Status(StatusCode.ERROR, "upstream timeout"))
        with tracer.start_as_current_span("plain", kind=SpanKind.PRODUCER):
            pass


def request_of(spans: list[ReadableSpan]) -> ExportTraceServiceRequest:
    request: ExportTraceServiceRequest = encode_spans(spans)
    return request


def body_of(spans: list[ReadableSpan]) -> bytes:
    return bytes(request_of(spans).SerializeToString())


def otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """The request as OTLP JSON: proto3 JSON with the ids in hex, as the spec says."""
    raw = json_format.MessageToDict(request)
    for resource in raw["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return raw


def test_protobuf_from_the_sdk() -> None:
    spans = sdk_spans(a_chain)
    decoded = decode_export(body_of(spans), PB, None, DEFAULT)
    assert decoded.rejected == 0
    assert decoded.message is None
    by_name = {s.name: s for s in decoded.spans}
    root, chat, plain = by_name["rag"], by_name["chat gpt-x"], by_name["plain"]
    sdk_root = next(s for s in spans if s.name == "rag")
    assert root.trace_id == f"{sdk_root.context.trace_id:032x}"
    assert root.span_id == f"{sdk_root.context.span_id:016x}"
    assert root.parent_id is None
    assert chat.parent_id == root.span_id == plain.parent_id
    assert (root.kind, chat.kind, plain.kind) == ("CHAIN", "chat", "producer")
    assert (chat.status, chat.status_message) == ("error", "upstream timeout")
    assert root.status == "unset"
    assert chat.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.usage.input_tokens": 12,
        "temperature": 0.5,
        "stream": False,
        "stop": ["\n", "END"],
    }
    assert root.events == (
        {
            "name": "cache miss",
            "time_ns": sdk_root.events[0].timestamp,
            "attributes": {"store": "redis", "tries": 2},
        },
    )
    assert root.service == "checkout"
    assert root.start_ns == sdk_root.start_time
    assert root.end_ns == sdk_root.end_time


def test_json_from_the_sdk_decodes_the_same_as_protobuf() -> None:
    request = request_of(sdk_spans(a_chain))
    from_pb = decode_export(request.SerializeToString(), PB, None, DEFAULT)
    body = json.dumps(otlp_json(request)).encode()
    from_json = decode_export(body, "application/json; charset=utf-8", None, DEFAULT)
    assert from_json == from_pb


def test_json_as_the_specification_writes_it() -> None:
    """OTLP JSON: hex ids, camelCase keys, int64 as strings, enums as numbers, unknown fields
    ignored; also the snake_case keys proto3 JSON allows."""
    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "my.service"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "my.library", "version": "1.0.0"},
                        "spans": [
                            {
                                "traceId": "5B8EFFF798038103D269B633813FC60C",
                                "spanId": "EEE19B7EC3C1B174",
                                "parentSpanId": "EEE19B7EC3C1B173",
                                "name": "I'm a server span",
                                "startTimeUnixNano": "1544712660000000000",
                                "endTimeUnixNano": "1544712661000000000",
                                "kind": 2,
                                "attributes": [
                                    {"key": "my.span.attr", "value": {"stringValue": "some value"}},
                                    {"key": "n", "value": {"intValue": "9007199254740993"}},
                                    {"key": "raw", "value": {"bytesValue": "aGVsbG8="}},
                                    {
                                        "key": "map",
                                        "value": {
                                            "kvlistValue": {
                                                "values": [
                                                    {"key": "a", "value": {"doubleValue": 1.5}},
                                                    {
                                                        "key": "b",
                                                        "value": {
                                                            "arrayValue": {
                                                                "values": [{"boolValue": True}]
                                                            }
                                                        },
                                                    },
                                                ]
                                            }
                                        },
                                    },
                                ],
                                "status": {"code": 1},
                                "someFutureField": {"x": 1},
                            },
                            {
                                "trace_id": "5b8efff798038103d269b633813fc60c",
                                "span_id": "eee19b7ec3c1b173",
                                "name": "root",
                                "start_time_unix_nano": 1544712659000000000,
                                "end_time_unix_nano": 1544712662000000000,
                            },
                        ],
                    }
                ],
            }
        ]
    }
    decoded = decode_export(json.dumps(body).encode(), "application/json", "identity", DEFAULT)
    server, root = decoded.spans
    assert server.trace_id == "5b8efff798038103d269b633813fc60c"
    assert (server.span_id, server.parent_id) == ("eee19b7ec3c1b174", "eee19b7ec3c1b173")
    assert (server.kind, server.status) == ("server", "ok")
    assert server.start_ns == 1544712660000000000
    assert server.attributes == {
        "my.span.attr": "some value",
        "n": 9007199254740993,
        "raw": base64.b64encode(b"hello").decode(),
        "map": {"a": 1.5, "b": [True]},
    }
    assert server.service == "my.service"
    assert (root.parent_id, root.kind, root.status) == (None, "internal", "unset")


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("traceId", "5b8efff798038103d269b633813fc60", "not an id in hex digits"),
        ("traceId", "zz8efff798038103d269b633813fc60c", "not an id in hex digits"),
        ("traceId", "5b8e fff798038103d269b633813fc60c", "not an id in hex digits"),
        ("traceId", "5b8efff798038103d269b633", "trace_id is 12 bytes"),
        ("traceId", "0" * 32, "trace_id is all zeros"),
        ("spanId", "eee19b7ec3c1b17400", "span_id is 9 bytes"),
        ("parentSpanId", "eee1", "parent_span_id is 2 bytes"),
        ("traceId", "W47/95gDgQPSabYzgT/GDA==", "not an id in hex digits"),  # base64, not hex
    ],
)
def test_bad_ids_are_refused(field: str, value: str, words: str) -> None:
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "s",
    }
    span[field] = value
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    with pytest.raises(TraceError, match=words) as caught:
        decode_export(json.dumps(body).encode(), "application/json", None, DEFAULT)
    assert caught.value.status == 400


@pytest.mark.parametrize(
    ("body", "content_type", "words"),
    [
        (b"\x0a\x05\x0a\x03\xff\xff", PB, "not an OTLP ExportTraceServiceRequest"),
        (b"\xff\xff\xff\xff", PB, "not an OTLP ExportTraceServiceRequest"),
        (b"{not json", "application/json", "not JSON"),
        (b"", "application/json", "not JSON"),
        (b"[1, 2]", "application/json", "a JSON list, not an object"),
        (b'{"resourceSpans": 5}', "application/json", "not an OTLP export request"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}',
            "application/json",
            "not an OTLP export request",
        ),
    ],
)
def test_malformed_bodies_are_refused(body: bytes, content_type: str, words: str) -> None:
    with pytest.raises(TraceError, match=words) as caught:
        decode_export(body, content_type, None, DEFAULT)
    assert caught.value.status == 400


def test_unknown_content_type_and_encoding() -> None:
    body = body_of(sdk_spans(a_chain))
    for content_type in ("text/plain", None, "application/grpc"):
        with pytest.raises(TraceError, match="not an OTLP trace encoding") as caught:
            decode_export(body, content_type, None, DEFAULT)
        assert caught.value.status == 415
    with pytest.raises(TraceError, match="content encoding 'br' is not taken") as caught:
        decode_export(body, PB, "br", DEFAULT)
    assert caught.value.status == 415


def test_gzip_and_deflate() -> None:
    body = body_of(sdk_spans(a_chain))
    plain = decode_export(body, PB, None, DEFAULT)
    assert decode_export(gzip.compress(body), PB, "gzip", DEFAULT) == plain
    assert decode_export(gzip.compress(body), PB, " GZIP ", DEFAULT) == plain
    assert decode_export(zlib.compress(body), PB, "deflate", DEFAULT) == plain
    # two gzip members one after the other are one body (as `cat a.gz b.gz`)
    half = len(body) // 2
    two = gzip.compress(body[:half]) + gzip.compress(body[half:])
    assert decode_export(two, PB, "gzip", DEFAULT) == plain


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"", "cut short"),
        (b"not gzip at all", "not valid gzip"),
        (gzip.compress(b"x" * 1000, mtime=0)[:-12], "cut short"),
        (gzip.compress(b"", mtime=0) + b"trailing", "not valid gzip"),
    ],
    ids=["empty", "not gzip", "cut short", "trailing bytes"],
)
def test_broken_gzip_is_refused(body: bytes, words: str) -> None:
    with pytest.raises(TraceError, match=words):
        decode_export(body, PB, "gzip", DEFAULT)


def test_request_size_as_sent_at_and_over_the_cap() -> None:
    body = body_of(sdk_spans(a_chain))
    at = OnlineConfig(max_request_mb=len(body) / 1_000_000)
    assert len(decode_export(body, PB, None, at).spans) == 3
    over = OnlineConfig(max_request_mb=(len(body) - 1) / 1_000_000)
    with pytest.raises(LimitError, match=r"max_request_mb") as caught:
        decode_export(body, PB, None, over)
    assert caught.value.status == 413


def test_request_size_once_inflated_at_and_over_the_cap() -> None:
    body = body_of(sdk_spans(a_chain))
    packed = gzip.compress(body)
    at = OnlineConfig(max_request_mb=len(body) / 1_000_000)
    assert len(decode_export(packed, PB, "gzip", at).spans) == 3
    over = OnlineConfig(max_request_mb=(len(body) - 1) / 1_000_000)
    with pytest.raises(LimitError, match=r"once inflated.*\[online\] max_request_mb") as caught:
        decode_export(packed, PB, "gzip", over)
    assert caught.value.status == 413


def many_spans(count: int) -> Callable[[Any], None]:
    def build(tracer: Any) -> None:
        for n in range(count):
            with tracer.start_as_current_span(f"s{n}"):
                pass

    return build


def test_spans_per_request_at_and_over_the_cap() -> None:
    body = body_of(sdk_spans(many_spans(5)))
    assert len(decode_export(body, PB, None, OnlineConfig(max_spans_per_request=5)).spans) == 5
    with pytest.raises(
        LimitError, match=r"holds 5 spans, more than 4 \(\[online\] max_spans_per_request\)"
    ) as caught:
        decode_export(body, PB, None, OnlineConfig(max_spans_per_request=4))
    assert caught.value.status == 413


def with_attributes(count: int) -> Callable[[Any], None]:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("fine"):
            pass
        with tracer.start_as_current_span("wide", attributes={f"a{n}": n for n in range(count)}):
            pass

    return build


def test_attributes_per_span_at_and_over_the_cap() -> None:
    limits = OnlineConfig(max_attributes=10)
    # the resource of the SDK has 5 attributes (service name, sdk, instance id), within 10
    at = decode_export(body_of(sdk_spans(with_attributes(10))), PB, None, limits)
    assert (len(at.spans), at.rejected) == (2, 0)
    over = decode_export(body_of(sdk_spans(with_attributes(11))), PB, None, limits)
    assert [s.name for s in over.spans] == ["fine"]
    assert over.rejected == 1
    assert over.message is not None
    assert "1 of 2 spans refused" in over.message
    assert (
        "span 'wide': the span has 11 attributes, more than [online] max_attributes (10)"
        in over.message
    )


def test_event_and_resource_attributes_count_too() -> None:
    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("noisy") as span:
            span.add_event("e", {f"k{n}": n for n in range(7)})
        with tracer.start_as_current_span("quiet"):
            pass

    limits = OnlineConfig(max_attributes=6)
    decoded = decode_export(body_of(sdk_spans(build)), PB, None, limits)
    assert [s.name for s in decoded.spans] == ["quiet"]
    assert decoded.message is not None
    assert "event 'e' has 7 attributes" in decoded.message
    # the SDK's resource has 5 attributes: with a cap of 4 every span of it is refused
    refused = decode_export(body_of(sdk_spans(build)), PB, None, OnlineConfig(max_attributes=4))
    assert (refused.spans, refused.rejected) == ((), 2)
    assert refused.message is not None
    assert "resource 0: the resource has 5 attributes" in refused.message


def test_attribute_size_at_and_over_the_cap() -> None:
    cap = 1024  # max_attribute_kb = 1
    overhead = AnyValue(string_value="x" * 1000).ByteSize() - 1000
    fits = "x" * (cap - overhead)
    assert AnyValue(string_value=fits).ByteSize() == cap

    def build(text: str) -> Callable[[Any], None]:
        def spans(tracer: Any) -> None:
            with tracer.start_as_current_span("big", attributes={"input.value": text}):
                pass
            with tracer.start_as_current_span("small"):
                pass

        return spans

    limits = OnlineConfig(max_attribute_kb=1)
    at = decode_export(body_of(sdk_spans(build(fits))), PB, None, limits)
    assert at.rejected == 0
    assert at.spans[0].attributes["input.value"] == fits
    over = decode_export(body_of(sdk_spans(build(fits + "x"))), PB, None, limits)
    assert [s.name for s in over.spans] == ["small"]
    assert over.message is not None
    assert (
        f"attribute 'input.value' of the span is {cap + 1:,} bytes, more than [online] max_attribute_kb (1)"
        in over.message
    )


def nested(depth: int) -> AnyValue:
    """A value nesting lists (and maps at odd levels) ``depth`` deep; 0 is a scalar."""
    value = AnyValue(int_value=7)
    for level in range(depth):
        if level % 2:
            value = AnyValue(kvlist_value={"values": [KeyValue(key="k", value=value)]})
        else:
            value = AnyValue(array_value={"values": [value]})
    return value


def test_depth_at_and_over_the_cap() -> None:
    def body(depth: int) -> bytes:
        request = request_of(sdk_spans(many_spans(2)))
        span = request.resource_spans[0].scope_spans[0].spans[0]
        span.attributes.append(KeyValue(key="tree", value=nested(depth)))
        return bytes(request.SerializeToString())

    limits = OnlineConfig(max_depth=3)
    at = decode_export(body(3), PB, None, limits)
    assert at.rejected == 0
    assert at.spans[0].attributes["tree"] == [{"k": [7]}]
    over = decode_export(body(4), PB, None, limits)
    assert over.rejected == 1
    assert [s.name for s in over.spans] == ["s1"]
    assert over.message is not None
    assert (
        "attribute 'tree' nests lists and maps deeper than [online] max_depth (3)" in over.message
    )
    assert (
        decode_export(body(0), PB, None, OnlineConfig(max_depth=1)).spans[0].attributes["tree"] == 7
    )


def test_an_empty_request_has_no_spans() -> None:
    assert decode_export(b"", PB, None, DEFAULT).spans == ()
    assert decode_export(b"{}", "application/json", None, DEFAULT).spans == ()


def test_response_in_the_request_encoding() -> None:
    assert encode_response(0, None, PB) == b""
    assert json.loads(encode_response(0, None, "application/json")) == {}
    body = encode_response(2, "2 of 5 spans refused", PB)
    response = ExportTraceServiceResponse.FromString(body)
    assert response.partial_success.rejected_spans == 2
    assert response.partial_success.error_message == "2 of 5 spans refused"
    as_json = json.loads(encode_response(2, "2 of 5 spans refused", "application/json"))
    assert as_json == {
        "partialSuccess": {"rejectedSpans": "2", "errorMessage": "2 of 5 spans refused"}
    }


def test_status_in_the_request_encoding() -> None:
    status = status_pb2.Status.FromString(encode_status("too big", PB, 8))
    assert (status.code, status.message) == (8, "too big")
    assert json.loads(encode_status("bad", "text/plain")) == {"code": 3, "message": "bad"}


def test_a_span_whose_parent_is_in_another_process_is_this_services_root() -> None:
    """An app behind an instrumented gateway starts its spans under the gateway's span (a
    ``traceparent`` header): that parent never reaches ragmeter, and the SDK says so (OTLP's
    IS_REMOTE span flag). The span keeps its parent (linked if the gateway's spans arrive
    too) and the app's own top span is the root until then, so the trace becomes complete
    and is scored; a parent of the same process still missing keeps it incomplete."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    from ragmeter.traces.conventions import trace_of

    gateway = SpanContext(0x5B8E, 0x51, is_remote=True, trace_flags=TraceFlags(1))

    def behind_a_gateway(tracer: Any) -> None:
        context = trace.set_span_in_context(NonRecordingSpan(gateway))
        with tracer.start_as_current_span("rag", context=context) as root:
            root.set_attribute("input.value", "Where is Paris?")
            with tracer.start_as_current_span("retrieve"):
                pass

    spans = decode_export(body_of(sdk_spans(behind_a_gateway)), PB, None, DEFAULT).spans
    by_name = {s.name: s for s in spans}
    assert by_name["rag"].parent_id == f"{0x51:016x}" and by_name["rag"].remote_parent
    assert not by_name["retrieve"].remote_parent
    assert by_name["retrieve"].parent_id == by_name["rag"].span_id
    found = trace_of(spans)
    assert found.complete and found.name == "rag" and found.row["query"] == "Where is Paris?"
    assert not trace_of([by_name["retrieve"]]).complete
