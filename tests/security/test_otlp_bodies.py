"""Attacks on the OTLP trace receiver's body decoding (``ragmeter.traces.otlp``): a
compression bomb, values nested to exhaust a parser's stack, many small bombs in a row, and
counts and sizes past the ``[online]`` caps. Each is refused with a 4xx naming the limit, or a
clear 400, within bounded memory; none crashes the decoder."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import pytest

from ragmeter.config import OnlineConfig
from ragmeter.errors import LimitError, TraceError
from ragmeter.traces.otlp import decode_export
from tests.unit.test_otlp import DEFAULT, PB, a_chain, request_of, sdk_spans

ONE_MB = 1 << 20
SPAN = (
    '{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "s",'
    ' "attributes": [{"key": "k", "value": %s}]}'
)


def zeros_packed(megabytes: int, wbits: int = 16 + zlib.MAX_WBITS) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    zeros = bytes(ONE_MB)
    return b"".join(packer.compress(zeros) for _ in range(megabytes)) + packer.flush()


@pytest.mark.parametrize(
    ("encoding", "wbits"), [("gzip", 16 + zlib.MAX_WBITS), ("deflate", zlib.MAX_WBITS)]
)
def test_a_compression_bomb_is_never_inflated_whole(encoding: str, wbits: int) -> None:
    """200 MB of zeros in ~200 KB against a 1 MB cap: refused (413) holding a few MB at most."""
    bomb = zeros_packed(200, wbits)
    assert len(bomb) < 300_000
    tracemalloc.start()
    try:
        with pytest.raises(LimitError, match=r"once inflated.*\[online\] max_request_mb") as caught:
            decode_export(bomb, PB, encoding, OnlineConfig(max_request_mb=1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.status == 413
    assert peak < 5 * ONE_MB


def test_many_small_gzip_members_count_together() -> None:
    """Members each under the cap, together over it: the cap holds the whole body."""
    member = gzip.compress(bytes(ONE_MB // 2))
    with pytest.raises(LimitError, match="max_request_mb"):
        decode_export(member * 5, PB, "gzip", OnlineConfig(max_request_mb=2))


def test_deeply_nested_protobuf_is_refused_not_crashed() -> None:
    request = request_of(sdk_spans(a_chain))
    value = request.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="deep").value
    for _ in range(200):
        value = value.array_value.values.add()
    value.string_value = "x"
    with pytest.raises(TraceError, match="not an OTLP ExportTraceServiceRequest") as caught:
        decode_export(request.SerializeToString(), PB, None, DEFAULT)
    assert caught.value.status == 400


@pytest.mark.parametrize("depth", [2000, 100_000])  # past orjson's depth
def test_deeply_nested_json_is_refused(depth: int) -> None:
    value = '{"arrayValue": {"values": [' * depth + '{"stringValue": "x"}' + "]}}" * depth
    body = wrapped(SPAN.replace("%s", value))
    with pytest.raises(TraceError) as caught:
        decode_export(body, "application/json", None, OnlineConfig(max_request_mb=10))
    assert caught.value.status == 400


def test_json_nested_past_the_proto_readers_depth_refuses_the_span_naming_max_depth() -> None:
    """150 lists deep is past the protobuf reader's depth, but the depth is counted on the
    parsed JSON first: the span is refused naming the cap (it was a 400 for the request)."""
    value = '{"arrayValue": {"values": [' * 150 + '{"stringValue": "x"}' + "]}}" * 150
    body = wrapped(SPAN.replace("%s", value))
    decoded = decode_export(body, "application/json", None, OnlineConfig(max_request_mb=10))
    assert decoded.spans == () and decoded.rejected == 1
    assert "[online] max_depth" in str(decoded.message)


def wrapped(spans: str) -> bytes:
    return ('{"resourceSpans": [{"scopeSpans": [{"spans": [' + spans + "]}]}]}").encode()


def test_a_flood_of_tiny_spans_is_refused_whole() -> None:
    trace = "5b8efff798038103d269b633813fc60c"
    spans = ",".join(f'{{"traceId": "{trace}", "spanId": "{n + 1:016x}"}}' for n in range(5_001))
    with pytest.raises(LimitError, match=r"\[online\] max_spans_per_request") as caught:
        decode_export(wrapped(spans), "application/json", None, DEFAULT)
    assert caught.value.status == 413


def test_an_attribute_flood_refuses_the_span_only() -> None:
    pairs = ",".join(f'{{"key": "k{n}", "value": {{"intValue": "1"}}}}' for n in range(10_000))
    flood = SPAN.replace('[{"key": "k", "value": %s}]', "[" + pairs + "]")
    fine = SPAN.replace("eee19b7ec3c1b174", "eee19b7ec3c1b175").replace(
        "%s", '{"stringValue": "x"}'
    )
    decoded = decode_export(wrapped(f"{flood}, {fine}"), "application/json", None, DEFAULT)
    assert [s.span_id for s in decoded.spans] == ["eee19b7ec3c1b175"]
    assert decoded.rejected == 1
    assert decoded.message is not None
    assert "[online] max_attributes" in decoded.message


def test_an_event_flood_refuses_the_span_in_bounded_time_and_memory() -> None:
    """Two million empty events fit in 4 MB of protobuf (two bytes each): made into Python
    values they took 18 s and 500 MB. Past ``[online] max_events`` the span is refused before
    any event is read."""
    request = request_of(sdk_spans(a_chain))
    flooded = request.resource_spans[0].scope_spans[0].spans[0]
    for _ in range(2_000_000):
        flooded.events.add()
    body = request.SerializeToString()
    assert len(body) < 5 * 1_000_000
    tracemalloc.start()
    try:
        decoded = decode_export(body, PB, None, DEFAULT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert flooded.span_id.hex() not in {s.span_id for s in decoded.spans}
    assert decoded.rejected == 1
    assert decoded.message is not None
    assert "[online] max_events (128)" in decoded.message
    assert peak < 50 * ONE_MB
