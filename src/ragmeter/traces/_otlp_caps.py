"""What the OTLP decoder says when a span passes a per-span cap of ``[online]``: one
wording, naming the setting, whether the span was counted in its JSON or in its protobuf."""

from __future__ import annotations

from ragmeter.config import OnlineConfig
from ragmeter.errors import clip

__all__ = ["too_deep", "too_large", "too_many_attributes", "too_many_events", "too_many_spans"]


def too_many_spans(count: int, limits: OnlineConfig) -> str:
    return f"the request holds {count:,} spans, more than {limits.max_spans_per_request:,}"


def too_many_attributes(whose: str, count: int, limits: OnlineConfig) -> str:
    return (
        f"{whose} has {count:,} attributes, more than [online] max_attributes "
        f"({limits.max_attributes:,})"
    )


def too_many_events(count: int, limits: OnlineConfig) -> str:
    return f"the span has {count:,} events, more than [online] max_events ({limits.max_events:,})"


def too_large(key: str, whose: str, size: str, limits: OnlineConfig) -> str:
    return (
        f"attribute {clip(key)!r} of {whose} is {size} bytes, more than "
        f"[online] max_attribute_kb ({limits.max_attribute_kb:g})"
    )


def too_deep(key: str, max_depth: int) -> str:
    return (
        f"attribute {clip(key)!r} nests lists and maps deeper than [online] max_depth ({max_depth})"
    )
