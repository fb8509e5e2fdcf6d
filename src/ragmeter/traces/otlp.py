"""One OTLP/HTTP trace export request (``POST /v1/traces``) read into ``SpanRecord``s, and the
answer the exporter expects back.

Both encodings of the OTLP specification: ``application/x-protobuf`` (the
``ExportTraceServiceRequest`` of ``opentelemetry-proto``) and ``application/json`` (OTLP JSON:
the same message in proto3 JSON, but with trace and span ids as hex, not base64), each
possibly compressed (``Content-Encoding: gzip`` or ``deflate``).

Every size an exporter controls is capped by ``[online]`` (``OnlineConfig``):
``max_request_mb`` holds the body as sent and once inflated (inflated piece by piece, stopping
at the cap: a gzip bomb is never inflated whole); ``max_spans_per_request`` refuses the whole
request (413). ``max_attributes``, ``max_attribute_kb``, ``max_depth`` and ``max_events``
refuse one span (its attributes, its events, its events' or its resource's attributes): the
rest are kept, and ``Decoded`` says how many were refused and why, which the receiver
answers as OTLP's ``partial_success``. A body that cannot be read raises ``TraceError`` (400;
415 for the content type or encoding). OTLP JSON has its caps counted before the message is
built from it (``_otlp_json``).
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass, field, replace
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragmeter.config import OnlineConfig
from ragmeter.errors import LimitError, TraceError, clip
from ragmeter.traces import _otlp_caps as caps
from ragmeter.traces._otlp_json import from_json
from ragmeter.traces.records import SpanRecord

__all__ = [
    "JSON",
    "PROTOBUF",
    "Decoded",
    "decode_export",
    "encode_response",
    "encode_status",
    "media_type",
]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_MEDIA = {PROTOBUF: PROTOBUF, "application/protobuf": PROTOBUF, JSON: JSON}
#: zlib's window bits per content encoding (gzip: its header; deflate: the zlib wrapper)
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
#: OTLP's span kinds, as ``SpanRecord.kind`` writes them when no convention names one
_KINDS = {0: "internal", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_STATUS = {0: "unset", 1: "ok", 2: "error"}
#: OTLP's span flags saying the parent is known to be in another process (``SpanFlags``)
_REMOTE_PARENT = 0x300


@dataclass(frozen=True)
class Decoded:
    """The spans of one export request that were kept; ``rejected`` spans were refused (each
    over a per-span cap) and ``message`` says why (naming the setting), or is None."""

    spans: tuple[SpanRecord, ...]
    rejected: int = 0
    message: str | None = None
    #: bytes of the body once inflated (what the spans weigh; not part of what they say)
    size: int = field(default=0, compare=False)


class _Refused(Exception):
    """One span over a per-span cap; the message names the setting."""


def media_type(content_type: str | None) -> str:
    """``PROTOBUF`` or ``JSON`` for a ``Content-Type`` header (parameters such as
    ``charset`` ignored); TraceError (415) for any other."""
    given = (content_type or "").split(";", 1)[0].strip().lower()
    media = _MEDIA.get(given)
    if media is None:
        shown = clip(given) or "none"
        raise TraceError(
            f"content type {shown!r} is not an OTLP trace encoding; send {PROTOBUF} or {JSON}",
            status=415,
        )
    return media


def decode_export(
    body: bytes, content_type: str | None, content_encoding: str | None, limits: OnlineConfig
) -> Decoded:
    """The spans of one OTLP/HTTP export request body. LimitError (413) past
    ``max_request_mb`` or ``max_spans_per_request``; TraceError for a body that cannot be
    read; spans over a per-span cap are left out and counted in the result."""
    media = media_type(content_type)
    cap = int(limits.max_request_mb * 1_000_000)  # megabytes as the service counts them
    if len(body) > cap:
        raise _too_large(f"the request body is {len(body):,} bytes")
    data = _inflate(body, content_encoding, cap)
    rejected, first = 0, ""
    if media == PROTOBUF:
        request = _from_protobuf(data)
    else:  # the caps counted on the parsed JSON, spans over them already out
        request, rejected, first = from_json(data, limits)
    count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    if count > limits.max_spans_per_request:
        raise LimitError(
            caps.too_many_spans(count, limits),
            setting="[online] max_spans_per_request",
            status=413,
        )
    return replace(_records(request, limits, rejected, first), size=len(data))


def encode_response(rejected: int, message: str | None, content_type: str | None) -> bytes:
    """The ``ExportTraceServiceResponse`` body in the request's encoding: empty when every
    span was kept, else ``partial_success`` with ``rejected_spans`` and ``error_message``."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message or ""
    return _encoded(response, content_type)


def encode_status(message: str, content_type: str | None, code: int = 3) -> bytes:
    """A ``google.rpc.Status`` body, OTLP/HTTP's answer to a refused request, in the
    request's encoding (JSON when that was not readable). ``code`` is the gRPC code (3:
    invalid argument, 8: resource exhausted)."""
    return _encoded(status_pb2.Status(code=code, message=message), content_type)


def _encoded(message: Any, content_type: str | None) -> bytes:
    try:
        media = media_type(content_type)
    except TraceError:
        media = JSON
    if media == PROTOBUF:
        return bytes(message.SerializeToString())
    text: str = json_format.MessageToJson(message, indent=None)
    return text.encode()


def _too_large(what: str, inflated: bool = False) -> LimitError:
    also = " once inflated" if inflated else ""
    return LimitError(
        f"{what}{also}, more than the receiver takes",
        setting="[online] max_request_mb",
        status=413,
    )


def _inflate(body: bytes, encoding: str | None, cap: int) -> bytes:
    """``body`` decoded from its content encoding, never more than ``cap`` bytes of it
    (LimitError past them); gzip members one after another are read as one body."""
    name = (encoding or "identity").strip().lower()
    if name == "identity":
        return body
    wbits = _WBITS.get(name)
    if wbits is None:
        raise TraceError(
            f"content encoding {clip(name)!r} is not taken; send gzip, deflate or identity",
            status=415,
        )
    out = bytearray()
    pending = body
    while True:
        pending = _inflate_member(zlib.decompressobj(wbits), pending, out, cap, name)
        if not pending or wbits == zlib.MAX_WBITS:
            break
    if pending:
        raise TraceError(f"the {name} body has {len(pending):,} bytes after its end")
    return bytes(out)


def _inflate_member(inflater: Any, data: bytes, out: bytearray, cap: int, name: str) -> bytes:
    """One gzip member (or the zlib stream) of ``data`` appended to ``out``; the bytes after
    its end. Output is asked for at most one byte past ``cap`` at a time."""
    try:
        while True:
            chunk = inflater.decompress(data, cap + 1 - len(out))
            out += chunk
            if len(out) > cap:
                raise _too_large(f"the request body is over {cap:,} bytes", inflated=True)
            if inflater.eof:
                return bytes(inflater.unused_data)
            data = inflater.unconsumed_tail
            if not chunk and not data:
                raise TraceError(f"the {name} body is cut short")
    except zlib.error as exc:
        raise TraceError(f"the body is not valid {name}: {exc}") from None


def _from_protobuf(data: bytes) -> ExportTraceServiceRequest:
    try:
        request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise TraceError(f"the body is not an OTLP ExportTraceServiceRequest: {exc}") from None
    return request


def _records(
    request: ExportTraceServiceRequest, limits: OnlineConfig, rejected: int, first: str
) -> Decoded:
    """Every span of the request as a SpanRecord, those over a per-span cap counted out
    (besides ``rejected`` already, the first of them refused for ``first``)."""
    spans: list[SpanRecord] = []
    for r, resource_spans in enumerate(request.resource_spans):
        count = sum(len(s.spans) for s in resource_spans.scope_spans)
        try:
            resource = _attributes(resource_spans.resource.attributes, limits, "the resource")
        except _Refused as exc:
            rejected += count
            first = first or f"resource {r}: {exc}"
            continue
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                try:
                    spans.append(_record(span, resource, limits))
                except _Refused as exc:
                    rejected += 1
                    first = first or f"span {clip(span.name)!r}: {exc}"
    message = None
    if rejected:
        message = f"{rejected:,} of {rejected + len(spans):,} spans refused; the first, {first}"
    return Decoded(tuple(spans), rejected, message)


def _record(span: Span, resource: dict[str, Any], limits: OnlineConfig) -> SpanRecord:
    """One span; TraceError for a bad id, _Refused past a per-span cap. A span whose parent
    is in another process (the ``flags`` say so) keeps it, marked ``remote_parent``."""
    trace_id = _id(span.trace_id, 16, "trace_id", span.name)
    span_id = _id(span.span_id, 8, "span_id", span.name)
    parent = (
        _id(span.parent_span_id, 8, "parent_span_id", span.name) if span.parent_span_id else None
    )
    attributes = _attributes(span.attributes, limits, "the span")
    if len(span.events) > limits.max_events:
        raise _Refused(caps.too_many_events(len(span.events), limits))
    events = tuple(
        {
            "name": event.name,
            "time_ns": event.time_unix_nano,
            "attributes": _attributes(event.attributes, limits, f"event {clip(event.name)!r}"),
        }
        for event in span.events
    )
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent,
        name=span.name,
        kind=_kind(attributes, span.kind),
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        status=_STATUS.get(span.status.code, "unset"),
        status_message=span.status.message or None,
        attributes=attributes,
        resource=resource,
        events=events,
        remote_parent=span.flags & _REMOTE_PARENT == _REMOTE_PARENT,
    )


def _id(value: bytes, size: int, field: str, name: str) -> str:
    if len(value) != size or not any(value):
        what = "all zeros" if len(value) == size else f"{len(value)} bytes"
        raise TraceError(f"span {clip(name)!r}: {field} is {what}, not {size} bytes")
    return value.hex()


def _kind(attributes: dict[str, Any], otlp_kind: int) -> str:
    """OpenInference's span kind, else the GenAI operation, else OTLP's kind in lower case."""
    for key in ("openinference.span.kind", "gen_ai.operation.name"):
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return _KINDS.get(otlp_kind, "internal")


def _attributes(pairs: Any, limits: OnlineConfig, whose: str) -> dict[str, Any]:
    """Key-value pairs as a dict of plain values; _Refused past ``max_attributes``, a value
    over ``max_attribute_kb`` (its protobuf size) or nested past ``max_depth``."""
    if len(pairs) > limits.max_attributes:
        raise _Refused(caps.too_many_attributes(whose, len(pairs), limits))
    cap = int(limits.max_attribute_kb * 1024)
    out: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        size = pair.value.ByteSize()
        if size > cap:
            raise _Refused(caps.too_large(pair.key, whose, f"{size:,}", limits))
        out[pair.key] = _value(pair.value, 0, limits.max_depth, pair.key)
    return out


def _value(value: AnyValue, depth: int, max_depth: int, key: str) -> Any:
    """An AnyValue as a plain value: a scalar is depth 0, a list or map one deeper than the
    deepest value it holds; bytes become base64 text."""
    which = value.WhichOneof("value")
    if which in ("array_value", "kvlist_value"):
        if depth + 1 > max_depth:
            raise _Refused(caps.too_deep(key, max_depth))
        if which == "array_value":
            return [_value(item, depth + 1, max_depth, key) for item in value.array_value.values]
        return {
            pair.key: _value(pair.value, depth + 1, max_depth, key)
            for pair in value.kvlist_value.values
        }
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None if which is None else getattr(value, which)
