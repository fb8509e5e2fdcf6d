"""OTLP JSON read into the protobuf message, its caps counted first.

``json_format.ParseDict`` builds the message field by field in Python: 4.5 MB of empty
events took it 4 s. So the parsed JSON (orjson) is screened before: more spans than
``max_spans_per_request`` refuse the request; a span over a per-span cap (attributes,
events, an attribute's values or depth, its resource's attributes) is taken out and counted,
as the protobuf reading would refuse it; what is never kept (links, the instrumentation
scope, resources and scopes without spans) is not read at all. Every list counted is bounded
by the caps, so the screen itself is cheap."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragmeter.config import OnlineConfig
from ragmeter.errors import LimitError, TraceError, clip
from ragmeter.traces import _otlp_caps as caps

__all__ = ["from_json"]

_HEX = re.compile(r"[0-9a-fA-F]*")
#: where OTLP JSON puts the ids of a span (both spellings proto3 JSON reads)
_ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")
#: the list fields of an AnyValue, both spellings
_NESTED = ("arrayValue", "array_value", "kvlistValue", "kvlist_value")


def from_json(data: bytes, limits: OnlineConfig) -> tuple[ExportTraceServiceRequest, int, str]:
    """OTLP JSON as the protobuf message (unknown fields ignored, as the specification asks),
    its hex ids read as the base64 proto3 JSON takes; the spans screened out (over a per-span
    cap) left out of it, with how many and why the first was ("" for none)."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise TraceError(f"the body is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise TraceError(f"the body is a JSON {type(raw).__name__}, not an object")
    rejected, first = _screen(raw, limits)
    for at, holder, key in _id_fields(raw):
        holder[key] = _hex_to_base64(holder[key], at)
    try:
        request = ExportTraceServiceRequest()
        json_format.ParseDict(raw, request, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as exc:
        raise TraceError(f"the body is not an OTLP export request: {clip(str(exc), 300)}") from None
    return request, rejected, first


def _screen(raw: dict[str, Any], limits: OnlineConfig) -> tuple[int, str]:
    """Refuse the request past ``max_spans_per_request``; take out the spans over a per-span
    cap (how many, and why the first), links, scopes and resources without spans."""
    resources = _listed(raw, "resourceSpans", "resource_spans")
    count = sum(len(_listed(s, "spans")) for r in resources for s in _scopes(r))
    if count > limits.max_spans_per_request:
        raise LimitError(
            caps.too_many_spans(count, limits),
            setting="[online] max_spans_per_request",
            status=413,
        )
    rejected, first = 0, ""
    for r, resource in enumerate(resources):
        spans = [s for scope in _scopes(resource) for s in _listed(scope, "spans")]
        held = resource.get("resource")
        why = _attributes(held, "the resource", limits) if isinstance(held, dict) else ""
        if why:
            rejected += len(spans)
            first = first or f"resource {r}: {why}"
            _keep(resource, ("scopeSpans", "scope_spans"), [])
            continue
        for scope in _scopes(resource):
            scope.pop("scope", None)
            kept = []
            for span in _listed(scope, "spans"):
                why = _span(span, limits) if isinstance(span, dict) else ""
                if why:
                    rejected += 1
                    first = first or f"span {clip(str(span.get('name', '')))!r}: {why}"
                    continue
                if isinstance(span, dict):
                    span.pop("links", None)
                kept.append(span)
            _keep(scope, ("spans", "spans"), kept)
        _keep(resource, ("scopeSpans", "scope_spans"), _scopes(resource))
    _keep(raw, ("resourceSpans", "resource_spans"), [r for r in resources if _scopes(r)])
    return rejected, first


def _keep(holder: dict[str, Any], keys: tuple[str, str], items: list[Any]) -> None:
    """``items`` as the list under whichever spelling of ``keys`` ``holder`` uses (a value
    that is not a list is left for the parser to name)."""
    key = keys[0] if keys[0] in holder else keys[1]
    if isinstance(holder.get(key), list):
        holder[key] = items


def _listed(holder: Any, camel: str, snake: str | None = None) -> list[Any]:
    """The list under ``camel`` (or ``snake``) of a JSON object; [] for anything else (the
    parser names a wrong type when it is not a list)."""
    if not isinstance(holder, dict):
        return []
    value = holder.get(camel, holder.get(snake or camel))
    return value if isinstance(value, list) else []


def _scopes(resource: Any) -> list[Any]:
    """A resource's scopes that hold spans (or are not objects, left to the parser)."""
    found = _listed(resource, "scopeSpans", "scope_spans")
    return [s for s in found if not isinstance(s, dict) or _listed(s, "spans")]


def _span(span: dict[str, Any], limits: OnlineConfig) -> str:
    """Why the span is over a per-span cap ("" when it is not)."""
    why = _attributes(span, "the span", limits)
    events = _listed(span, "events")
    if why or len(events) > limits.max_events:
        return why or caps.too_many_events(len(events), limits)
    for event in events:
        name = clip(str(event.get("name", ""))) if isinstance(event, dict) else ""
        why = why or _attributes(event, f"event {name!r}", limits)
    return why


def _attributes(holder: Any, whose: str, limits: OnlineConfig) -> str:
    pairs = _listed(holder, "attributes")
    if len(pairs) > limits.max_attributes:
        return caps.too_many_attributes(whose, len(pairs), limits)
    for pair in pairs:
        if isinstance(pair, dict):
            why = _value(str(pair.get("key", "")), pair.get("value"), whose, limits)
            if why:
                return why
    return ""


def _value(key: str, value: Any, whose: str, limits: OnlineConfig) -> str:
    """Why one attribute's value is over a cap: lists and maps nested past ``max_depth``, or
    more values than fit ``max_attribute_kb`` (each value of a list or map is 2 bytes of
    protobuf at least). Walked with a stack, never past either cap."""
    room = int(limits.max_attribute_kb * 1024) // 2
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        held, depth = stack.pop()
        if not isinstance(held, dict):
            continue
        for name in _NESTED:
            items = _listed(held.get(name), "values")
            if not items:
                continue
            if depth + 1 > limits.max_depth:
                return caps.too_deep(key, limits.max_depth)
            room -= len(items)
            if room < 0:
                size = f"over {int(limits.max_attribute_kb * 1024):,}"
                return caps.too_large(key, whose, size, limits)
            is_map = name.startswith("kvlist")
            stack.extend(
                (item.get("value") if is_map and isinstance(item, dict) else item, depth + 1)
                for item in items
            )
    return ""


def _id_fields(raw: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(path, object, key) of every span id in an OTLP JSON request (links are left out)."""
    for r, resource in enumerate(_listed(raw, "resourceSpans", "resource_spans")):
        for s, scope in enumerate(_listed(resource, "scopeSpans", "scope_spans")):
            for n, span in enumerate(_listed(scope, "spans")):
                if isinstance(span, dict):
                    at = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                    yield from ((f"{at}.{k}", span, k) for k in _ID_KEYS if k in span)


def _hex_to_base64(value: Any, at: str) -> Any:
    if not isinstance(value, str):
        return value  # the parser names the wrong type
    if len(value) % 2 or not _HEX.fullmatch(value):
        raise TraceError(f"{at} is {clip(value)!r}, not an id in hex digits")
    return base64.b64encode(bytes.fromhex(value)).decode()
