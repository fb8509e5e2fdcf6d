"""A loopback OTLP/HTTP listener for the tests: it keeps every trace export request's body
and headers as the real exporter sent them and answers as OTLP asks (an
``ExportTraceServiceResponse`` in the request's encoding). ``traced`` gives a tracer provider
of its own exporting there, so each test instruments with a provider it shuts down."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragmeter.config import OnlineConfig
from ragmeter.traces import SpanRecord
from ragmeter.traces.otlp import decode_export, encode_response


@dataclass(frozen=True)
class Export:
    """One captured request: its path, content type and encoding, body as sent."""

    path: str
    content_type: str | None
    content_encoding: str | None
    body: bytes


@dataclass
class OtlpCapture:
    """The listener; ``exports`` fills as requests arrive."""

    exports: list[Export] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1/traces"

    def spans(self, limits: OnlineConfig | None = None) -> list[SpanRecord]:
        """Every captured body decoded (with the receiver's default caps unless given)."""
        spans: list[SpanRecord] = []
        for export in self.exports:
            decoded = decode_export(
                export.body, export.content_type, export.content_encoding, limits or OnlineConfig()
            )
            assert decoded.rejected == 0, decoded.message
            spans.extend(decoded.spans)
        return spans


@contextmanager
def otlp_listener() -> Iterator[OtlpCapture]:
    capture = OtlpCapture()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            content_type = self.headers.get("Content-Type")
            capture.exports.append(
                Export(self.path, content_type, self.headers.get("Content-Encoding"), body)
            )
            answer = encode_response(0, None, content_type)
            self.send_response(200)
            self.send_header("Content-Type", content_type or "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    capture.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=capture.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield capture
    finally:
        capture.server.shutdown()
        capture.server.server_close()


@contextmanager
def traced(service: str = "shop-assistant") -> Iterator[tuple[TracerProvider, OtlpCapture]]:
    """A tracer provider exporting with the real OTLP/HTTP exporter (protobuf, gzip) to a
    loopback listener; shut down (so flushed) on leaving."""
    with otlp_listener() as capture:
        exporter = OTLPSpanExporter(endpoint=capture.endpoint, compression=Compression.Gzip)
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(BatchSpanProcessor(exporter))
        try:
            yield provider, capture
        finally:
            provider.shutdown()
