"""Production traces through a real ``ragmeter serve`` (SQLite, then PostgreSQL): OTLP/HTTP
exports in protobuf and JSON, gzip or not, from a program holding an ``ingest`` key and from
the OpenTelemetry SDK's own exporter configured by its environment variables; the traces
listed, filtered and read with their span tree; spans refused by a per-span cap answered as
``partial_success``; traces saved as a dataset version; and a stopping server storing every
span it accepted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.client import Client
from ragmeter.runs.storage.traces import TraceStore
from ragmeter.store.db import Store
from ragmeter.traces.records import SpanRecord
from tests.integration.roles import add_user, as_user
from tests.integration.service import KEY, ServiceProcess, data, failure
from tests.integration.trace_bodies import (
    JSON,
    export,
    post,
    rejected,
    sid,
    span,
    tid,
    traces,
)

pytestmark = pytest.mark.both_stores

CONFIG = "[online]\nmax_attributes = 8\n"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, str]]:
    home = tmp_path_factory.mktemp("traces-service")
    (home / "ragmeter.toml").write_text(CONFIG, encoding="utf-8")
    ingest = add_user(home, "collector", "ingest")
    server = ServiceProcess(home).start()
    try:
        yield server, ingest
    finally:
        server.stop()


def test_exports_in_each_encoding_become_traces(served: tuple[ServiceProcess, str]) -> None:
    server, ingest = served
    with as_user(server, ingest) as sender, as_user(server, KEY) as admin:
        # trace 1: its children first (protobuf), its root later (gzip protobuf)
        response = post(sender, export([span(1, 2, 1), span(1, 3, 2)]))
        assert response.status_code == 200 and rejected(response) == 0
        assert response.headers["content-type"].startswith("application/x-protobuf")
        root = span(1, 1, query="where is my parcel?")
        assert post(sender, export([root]), gzipped=True).status_code == 200
        # trace 2 as OTLP JSON, trace 3 as gzip JSON, from another service
        response = post(sender, export([span(2, 1, query="refund")]), media=JSON)
        assert response.status_code == 200 and rejected(response) == 0
        assert response.headers["content-type"].startswith(JSON)
        late = export([span(3, 1, query="opening hours")], service="mail")
        assert post(sender, late, media=JSON, gzipped=True).status_code == 200
        listed = traces(admin, 3)
        assert sorted(t["trace_id"] for t in listed) == [tid(1), tid(2), tid(3)]
        first = next(t for t in listed if t["trace_id"] == tid(1))
        if first["span_count"] < 3:  # the root is stored by the next batch
            first = traces(admin, 1, service="shop", text="parcel")[0]
        assert first["complete"] and first["span_count"] == 3 and first["service"] == "shop"
        assert first["row"]["query"] == "where is my parcel?"
        assert first["row"]["response"] == "answer to where is my parcel?"
        assert first["latency_ms"] > 0 and first["scores"] == []
        mail = data(admin.get("/api/v2/serve/traces", params={"service": "mail"}))
        assert [t["trace_id"] for t in mail["items"]] == [tid(3)] and mail["total"] == 1
        detail = data(admin.get(f"/api/v2/serve/traces/{tid(1)}"))
        assert [(s["depth"], s["span_id"]) for s in detail["spans"]] == [
            (0, sid(1)),
            (1, sid(2)),
            (2, sid(3)),
        ]
        assert detail["spans"][0]["resource"] == {"service.name": "shop"}
        assert detail["spans"][0]["attributes"]["input.value"] == "where is my parcel?"
        assert "no trace" in failure(admin.get(f"/api/v2/serve/traces/{tid(99)}"), 404)


def test_spans_over_a_cap_are_refused_and_the_rest_kept(
    served: tuple[ServiceProcess, str],
) -> None:
    server, ingest = served
    many = {f"key.{i}": "v" for i in range(20)}  # over [online] max_attributes = 8
    spans = [span(10, 1, query="kept"), span(10, 2, 1, attributes=many)]
    with as_user(server, ingest) as sender, as_user(server, KEY) as admin:
        for media in ("application/x-protobuf", JSON):
            response = post(sender, export(spans), media=media)
            assert response.status_code == 200 and rejected(response) == 1
        found = traces(admin, 1, text="kept")
        assert [t["span_count"] for t in found] == [1]


def test_the_sdk_exporter_sends_with_the_readme_environment(
    served: tuple[ServiceProcess, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings docs/how-to/production-traces.md gives an app: the endpoint and the key in the exporter's headers
    variable (``%20`` for the space, as the variable's format wants)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    server, ingest = served
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{server.url}/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{ingest}")
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("ask") as root:
        root.set_attribute("input.value", "what is OTLP?")
        root.set_attribute("output.value", "a protocol")
        with tracer.start_as_current_span("retrieve"):
            pass
    provider.shutdown()
    with as_user(server, KEY) as admin:
        found = traces(admin, 1, service="sdk-app", complete=True)
        assert len(found) == 1 and found[0]["span_count"] == 2
        row = found[0]["row"]
        assert (row["query"], row["response"]) == ("what is OTLP?", "a protocol")


def test_traces_become_a_dataset_version_through_the_client(
    served: tuple[ServiceProcess, str],
) -> None:
    server, ingest = served
    with as_user(server, ingest) as sender, as_user(server, KEY) as admin:
        post(sender, export([span(20 + n, 1, query=f"saved {n}") for n in range(3)]))
        assert len(traces(admin, 3, text="saved")) == 3
    with Client(api_base=server.api, api_key=KEY) as client:
        _save_through(client)
    with as_user(server, KEY) as admin:
        bad = admin.post("/api/v2/serve/traces/dataset", json={"name": "x", "trace_ids": ["z"]})
        assert bad.status_code == 422
        missing = admin.post(
            "/api/v2/serve/traces/dataset", json={"name": "x", "trace_ids": [tid(404)]}
        )
        assert tid(404) in failure(missing, 404)
        rows = data(admin.get("/api/v2/serve/datasets/from-prod@1/rows"))
        assert [r["query"] for r in rows["items"]] == ["saved 1", "saved 0"]
        assert rows["items"][0]["metadata"]["trace_id"] == tid(21)


def _save_through(client: Client) -> None:
    page = client.traces(text="saved", limit=2)
    assert page.total == 3 and len(page.items) == 2
    assert client.trace(tid(20)).trace.row["query"] == "saved 0"
    made = client.traces_to_dataset("from-prod", trace_ids=[tid(21), tid(20)])
    assert (made.version, made.rows, made.reused) == (1, 2, False)
    again = client.traces_to_dataset("from-prod", filters={"text": "saved"})
    assert (again.version, again.rows, again.reused) == (2, 3, False)


def test_a_stopping_server_stores_every_span_it_accepted(tmp_path: Path, store_kind: str) -> None:
    server = ServiceProcess(tmp_path / "home").start()
    spans = [span(100 + n // 10, n % 10 + 1, None if n % 10 == 0 else 1) for n in range(4000)]
    with as_user(server, KEY) as sender:
        for start in range(0, len(spans), 1000):
            assert post(sender, export(spans[start : start + 1000])).status_code == 200
    url = server.store_url
    server.stop()
    store = Store(url)
    try:
        found, total = TraceStore(store).list(limit=1000)
        assert total == 400 and sum(t.record.span_count for t in found) == 4000
    finally:
        store.close()


def test_a_starting_server_deletes_traces_past_keep_days(tmp_path: Path, store_kind: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ragmeter.toml").write_text("[online]\nkeep_days = 2\n", encoding="utf-8")
    server = ServiceProcess(home)
    store = Store(server.store_url)
    day = 86_400 * 1_000_000_000
    try:
        kept = TraceStore(store)
        for n, age in ((1, 0), (2, 3 * day)):  # now, and three days ago
            record = span(n, 1, query=f"q{n}", start=time.time_ns() - age)
            kept.add_spans([_record(record)])
        assert kept.list()[1] == 2
        with server, as_user(server, KEY) as admin:
            deadline = time.monotonic() + 30
            while len(traces(admin, 0)) > 1 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert [t["trace_id"] for t in traces(admin, 0)] == [tid(1)]
    finally:
        store.close()


def _record(given: Any) -> SpanRecord:
    """A span message as the store keeps it (what the receiver decodes it to)."""
    return SpanRecord(
        trace_id=given.trace_id.hex(),
        span_id=given.span_id.hex(),
        parent_id=given.parent_span_id.hex() or None,
        name=given.name,
        kind="CHAIN",
        start_ns=given.start_time_unix_nano,
        end_ns=given.end_time_unix_nano,
        status="unset",
        attributes={a.key: a.value.string_value for a in given.attributes},
        resource={"service.name": "shop"},
    )
