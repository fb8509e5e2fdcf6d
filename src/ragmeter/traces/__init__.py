"""Production traces: OTLP spans from an instrumented app and the rows they become."""

from ragmeter.traces.records import SpanRecord, TraceRecord, TraceScore

__all__ = ["SpanRecord", "TraceRecord", "TraceScore"]
