"""Production traces as ragmeter keeps them: the spans an instrumented app exported (OTLP),
and a trace summed up as one row of our fields (query, response, retrieved contexts, tool
calls, ...) with what it cost and who asked. Plain frozen dataclasses: decoded by the
thousand per second, stored by the runs layer, scored by online rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SpanRecord", "TraceRecord", "TraceScore"]


@dataclass(frozen=True)
class SpanRecord:
    """One exported span. ``kind`` is the OpenInference span kind when the span has one
    (``LLM``, ``RETRIEVER``, ``TOOL``, ``CHAIN``, ``AGENT``, ``EMBEDDING``, ``RERANKER``,
    ``GUARDRAIL``, ``EVALUATOR``), else the GenAI operation (``gen_ai.operation.name``: ``chat``,
    ``embeddings``, ``execute_tool``, ...), else the OTLP kind in lower case (``internal``,
    ``server``, ``client``, ...). ``attributes`` are the span's attributes with their dotted
    keys as sent (values: str, int, float, bool or lists of them); ``resource`` the resource's
    (``service.name`` among them)."""

    trace_id: str  # 32 lower-case hex digits
    span_id: str  # 16 lower-case hex digits
    parent_id: str | None  # None for a root span
    name: str
    kind: str
    start_ns: int  # Unix epoch nanoseconds
    end_ns: int
    status: str  # "ok", "error" or "unset"
    status_message: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)
    events: tuple[dict[str, Any], ...] = ()  # {"name", "time_ns", "attributes"}
    #: the parent is in another process (OTLP's IS_REMOTE span flag): the root here until
    #: that parent arrives, if it ever does
    remote_parent: bool = False

    @property
    def service(self) -> str | None:
        """The resource's ``service.name``."""
        value = self.resource.get("service.name")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class TraceRecord:
    """A trace summed up from its spans so far. ``row`` holds our row fields (those of
    ``ragmeter.datasets.Row``: ``query``, ``response``, ``retrieved_contexts``,
    ``retrieved_ids``, ``messages``, ``reference``, ``metadata``; only those the spans gave),
    ready to become a dataset row or to be scored. ``complete``: its root span has arrived."""

    trace_id: str
    name: str  # the root span's name ("" until it arrives)
    service: str | None
    start_ns: int
    end_ns: int
    status: str  # "ok", "error" or "unset" (any span in error makes it "error")
    complete: bool
    row: dict[str, Any]
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    session_id: str | None = None
    user_id: str | None = None
    span_count: int = 0

    @property
    def latency_ms(self) -> float:
        """Root span's duration (first start to last end of the spans so far)."""
        return max(0, self.end_ns - self.start_ns) / 1e6


@dataclass(frozen=True)
class TraceScore:
    """One metric's score of a trace, as an online rule (``rule``: its name) or a person
    scored it. A null ``score`` comes with its ``reason`` and ``error_kind`` (upstream, input
    or metric), as a run's results do; ``feedback`` is the judge's reasoning."""

    trace_id: str
    metric: str
    score: float | None
    rule: str | None = None
    passing: bool | None = None
    reason: str | None = None
    error_kind: str | None = None
    feedback: str | None = None
    judge_model: str | None = None
    tokens: int = 0
    scored_ns: int = 0  # Unix epoch nanoseconds
