"""Attacks on the OTLP decoder with bodies under ``[online] max_request_mb`` that are
expensive to read: millions of empty events, links or array values in 4.5 MB of JSON, more
spans than ``max_spans_per_request`` each heavy, and attribute values nested past
``max_depth`` in JSON and in protobuf (deep enough to blow a recursive reader's stack). Each
is refused naming its cap (or, for what the receiver never keeps, accepted without it); the
JSON caps are counted on the parsed JSON before the protobuf message is built, so such a
body costs a fraction of a second, not seconds (timings are measured in the benchmarks, not
asserted here)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from ragmeter.config import OnlineConfig
from ragmeter.errors import LimitError, TraceError
from ragmeter.traces.otlp import JSON, PROTOBUF, decode_export
from tests.integration.trace_bodies import export, span

LIMITS = OnlineConfig()
MANY = 1_500_000  # "{}," is 3 bytes: 4.5 MB of them


def _json(*spans: dict[str, Any]) -> bytes:
    request = {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}
    return json.dumps(request, separators=(",", ":")).encode()  # orjson writes 255 deep at most


def _span(n: int, **fields: Any) -> dict[str, Any]:
    ids = {"traceId": f"{1:032x}", "spanId": f"{n:016x}", "name": f"s{n}"}
    return ids | fields


def test_millions_of_empty_events_refuse_the_span_naming_max_events() -> None:
    body = _json(_span(1, events=[{}] * MANY), _span(2))
    assert 4_000_000 < len(body) < LIMITS.max_request_mb * 1_000_000
    decoded = decode_export(body, JSON, None, LIMITS)
    assert [s.name for s in decoded.spans] == ["s2"]
    assert decoded.rejected == 1 and decoded.message is not None
    assert "[online] max_events" in decoded.message and "'s1'" in decoded.message


def test_millions_of_empty_links_are_not_read() -> None:
    """Links are not kept: however many, the span is."""
    decoded = decode_export(_json(_span(1, links=[{}] * MANY)), JSON, None, LIMITS)
    assert [s.name for s in decoded.spans] == ["s1"] and decoded.rejected == 0


@pytest.mark.parametrize("where", ["span", "event", "resource"])
def test_an_attribute_of_millions_of_values_is_refused_naming_max_attribute_kb(
    where: str,
) -> None:
    huge = [{"key": "k", "value": {"arrayValue": {"values": [{}] * MANY}}}]
    if where == "resource":
        raw = orjson.loads(_json(_span(1)))
        raw["resourceSpans"][0]["resource"] = {"attributes": huge}
        body = orjson.dumps(raw)
    elif where == "event":
        body = _json(_span(1, events=[{"name": "e", "attributes": huge}]))
    else:
        body = _json(_span(1, attributes=huge))
    decoded = decode_export(body, JSON, None, LIMITS)
    assert decoded.spans == () and decoded.rejected == 1
    assert decoded.message is not None and "[online] max_attribute_kb" in decoded.message


def test_too_many_heavy_spans_are_refused_before_they_are_read() -> None:
    heavy = [_span(n + 1, events=[{}] * 250) for n in range(LIMITS.max_spans_per_request + 1)]
    with pytest.raises(LimitError, match=r"\[online\] max_spans_per_request") as caught:
        decode_export(_json(*heavy), JSON, None, LIMITS)
    assert caught.value.status == 413


def _nested_json(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def _nested_protobuf(depth: int) -> bytes:
    """An AnyValue nested ``depth`` arrays deep, as protobuf bytes built from the inside out
    (no message object nests that deep)."""

    def field(number: int, payload: bytes) -> bytes:
        size, length = len(payload), bytearray()
        while True:
            byte, size = size & 0x7F, size >> 7
            length.append(byte | (0x80 if size else 0))
            if not size:
                break
        return bytes([number << 3 | 2]) + bytes(length) + payload

    value = field(1, b"x")  # AnyValue.string_value
    for _ in range(depth):
        value = field(5, field(1, value))  # AnyValue.array_value(ArrayValue.values)
    return value


def _protobuf_with(value: bytes) -> bytes:
    """An export request of one span whose attribute "deep" holds ``value`` (AnyValue bytes):
    the span's KeyValue spliced into its protobuf bytes."""
    body = export([span(1, 1, query="q")]).SerializeToString()
    marker = b"input.value"
    assert body.count(marker) == 1
    pair = b"\x0a\x04deep" + b"\x12" + _varint(len(value)) + value  # KeyValue(key, value)
    attribute = b"\x4a" + _varint(len(pair)) + pair  # Span.attributes (field 9)
    request = export([span(1, 1, query="q")])
    spans = request.resource_spans[0].scope_spans[0].spans
    kept = spans[0].SerializeToString() + attribute
    del spans[:]
    shell = request.SerializeToString()
    resource = request.resource_spans[0]
    scope = resource.scope_spans[0].SerializeToString() + b"\x12" + _varint(len(kept)) + kept
    del resource.scope_spans[:]
    outer = resource.SerializeToString() + b"\x12" + _varint(len(scope)) + scope
    assert shell  # the request holds nothing else
    return b"\x0a" + _varint(len(outer)) + outer


def _varint(size: int) -> bytes:
    out = bytearray()
    while True:
        byte, size = size & 0x7F, size >> 7
        out.append(byte | (0x80 if size else 0))
        if not size:
            return bytes(out)


@pytest.mark.parametrize("depth", [LIMITS.max_depth + 1, 45])
def test_values_nested_past_max_depth_refuse_the_span(depth: int) -> None:
    deep = {"key": "deep", "value": _nested_json(depth)}
    decoded = decode_export(_json(_span(1, attributes=[deep])), JSON, None, LIMITS)
    assert decoded.rejected == 1 and "[online] max_depth" in str(decoded.message)
    decoded = decode_export(_protobuf_with(_nested_protobuf(depth)), PROTOBUF, None, LIMITS)
    assert decoded.rejected == 1 and "[online] max_depth" in str(decoded.message)


def test_json_nested_deeper_than_protobufs_reader_goes_is_refused_naming_max_depth() -> None:
    """60 lists deep is 120 messages: past what the protobuf reader takes (100), once a
    400 "not an OTLP export request"; the depth is counted first, so the span is refused
    naming the cap and the rest of the request is kept."""
    deep = {"key": "deep", "value": _nested_json(60)}
    decoded = decode_export(_json(_span(1, attributes=[deep]), _span(2)), JSON, None, LIMITS)
    assert [s.name for s in decoded.spans] == ["s2"]
    assert decoded.rejected == 1 and "[online] max_depth" in str(decoded.message)


def test_values_nested_at_max_depth_are_kept() -> None:
    decoded = decode_export(
        _protobuf_with(_nested_protobuf(LIMITS.max_depth)), PROTOBUF, None, LIMITS
    )
    assert decoded.rejected == 0
    value = decoded.spans[0].attributes["deep"]
    for _ in range(LIMITS.max_depth):
        (value,) = value
    assert value == "x"


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_values_nested_past_any_stack_are_refused_as_unreadable(depth: int) -> None:
    with pytest.raises(TraceError) as caught:
        decode_export(_protobuf_with(_nested_protobuf(depth)), PROTOBUF, None, LIMITS)
    assert caught.value.status == 400
    body = _json(_span(1, attributes=[{"key": "deep", "value": _nested_json(1)}]))
    deep = body.replace(b'{"arrayValue":{"values":[', b'{"arrayValue":{"values":[' * depth, 1)
    deep = deep.replace(b"]}}", b"]}}" * depth, 1)
    with pytest.raises(TraceError) as caught:
        decode_export(deep, JSON, None, LIMITS)
    assert caught.value.status == 400
