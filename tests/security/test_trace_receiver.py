"""Attacks on the OTLP receiver (``POST /v1/traces``) of a real ``ragmeter serve``: no key, a
key of a role that may not send traces, an ``ingest`` key used anywhere else, a body over
``[online] max_request_mb`` as sent or once inflated (a gzip bomb), more spans than
``[online] max_spans_per_request``, malformed protobuf, JSON nested past any parser's stack,
an unknown content type, a request past ``[online] max_queued_spans`` (413: it never fits) and a
full queue (503, retry). Each
is refused with a 4xx (or 503) naming the limit, and the server goes on serving."""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator

import pytest

from ragmeter.service.permissions import ROUTES
from ragmeter.store.db import Store
from ragmeter.store.locks import write_lock
from tests.integration.roles import add_user, as_user, users_server
from tests.integration.service import KEY, ServiceProcess, failure
from tests.integration.trace_bodies import (
    JSON,
    PROTOBUF,
    export,
    message,
    post,
    rejected,
    span,
    tid,
    traces,
)

pytestmark = pytest.mark.both_stores

CONFIG = "[online]\nmax_request_mb = 0.05\nmax_spans_per_request = 50\n"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    home = tmp_path_factory.mktemp("trace-receiver")
    (home / "ragmeter.toml").write_text(CONFIG, encoding="utf-8")
    server, keys = users_server(home, (("collector", "ingest"),))
    try:
        yield server, keys
    finally:
        server.stop()


def _refused(response: object, status: int) -> str:
    """The message of an OTLP refusal (a ``google.rpc.Status`` as JSON) or of the envelope."""
    assert getattr(response, "status_code", None) == status, (
        getattr(response, "status_code", None),
        getattr(response, "text", ""),
    )
    return str(getattr(response, "text", ""))


def test_only_an_ingest_or_admin_key_may_send_traces(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    body = export([span(1, 1, query="hello")])
    with as_user(server, "") as nobody:
        nobody.headers.pop("Authorization")
        assert "API key" in failure(post(nobody, body), 401)
    for who in ("viewer", "reviewer", "member"):
        with as_user(server, keys[who]) as http:
            message = failure(post(http, body), 403)
            assert f"role '{who}'" in message and "ingest" in message
    for who in ("collector", "admin", "config"):
        with as_user(server, keys[who]) as http:
            response = post(http, body)
            assert response.status_code == 200 and rejected(response) == 0


def test_an_ingest_key_is_refused_everywhere_else(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    guarded = [key for key, rule in ROUTES.items() if rule.action is not None]
    assert ("GET", "/api/v2/serve/traces") in guarded
    with as_user(server, keys["collector"]) as http:
        for method, path in guarded:
            if path == "/v1/traces":
                continue
            url = path.replace("{", "").replace("}", "")  # a made-up id
            if path == "/docs/assets":
                url = "/docs/assets/swagger-ui.css"  # a file of Swagger UI's
            response = http.request(method, url, json={})
            assert response.status_code == 403, (method, path, response.text)
            assert "role 'ingest'" in response.text, (method, path)


def test_bodies_over_the_size_cap_are_refused_naming_it(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["collector"]) as http:
        large = b"\x00" * 60_000  # over 0.05 MB as sent: refused before it is read
        response = http.post("/v1/traces", content=large, headers={"Content-Type": PROTOBUF})
        assert "[online] max_request_mb" in failure(response, 413)
        bomb = gzip.compress(b"\x00" * 20_000_000)  # ~20 KB sent, 20 MB once inflated
        assert len(bomb) < 50_000
        headers = {"Content-Type": PROTOBUF, "Content-Encoding": "gzip"}
        response = http.post("/v1/traces", content=bomb, headers=headers)
        assert "[online] max_request_mb" in _refused(response, 413)
        assert post(http, export([span(2, 1, query="after")])).status_code == 200


def test_too_many_spans_are_refused_naming_the_cap(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["collector"]) as http:
        many = export([span(3, n + 1, None if n == 0 else 1) for n in range(51)])
        for media in (PROTOBUF, JSON):
            message = _refused(post(http, many, media=media), 413)
            assert "[online] max_spans_per_request" in message
        assert post(http, export([span(3, n + 1, 1) for n in range(50)])).status_code == 200


def test_unreadable_bodies_are_refused(served: tuple[ServiceProcess, dict[str, str]]) -> None:
    server, keys = served
    with as_user(server, keys["collector"]) as http:
        broken = http.post(
            "/v1/traces", content=b"\x0a\xff\xff\xff\x0f", headers={"Content-Type": PROTOBUF}
        )
        _refused(broken, 400)
        deep = b'{"resourceSpans": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
        _refused(http.post("/v1/traces", content=deep, headers={"Content-Type": JSON}), 400)
        headers = {"Content-Type": JSON, "Content-Encoding": "gzip"}
        _refused(http.post("/v1/traces", content=gzip.compress(deep), headers=headers), 400)
        unknown = http.post("/v1/traces", content=b"<xml/>", headers={"Content-Type": "text/xml"})
        _refused(unknown, 415)
        assert http.get("/health").status_code == 200


def test_a_request_larger_than_the_queue_is_413_not_retried(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> None:
    """A request with more spans than the queue ever holds could never succeed: 413 naming
    the setting, without ``Retry-After`` (an exporter retries a 503 for ever)."""
    home = tmp_path_factory.mktemp("trace-queue")
    (home / "ragmeter.toml").write_text("[online]\nmax_queued_spans = 3\n", encoding="utf-8")
    ingest = add_user(home, "collector", "ingest")
    with ServiceProcess(home) as server, as_user(server, ingest) as http:
        never = export([span(4, 1, query="never"), span(4, 2, 1), span(4, 3, 1), span(4, 4, 1)])
        response = post(http, never)
        assert "[online] max_queued_spans" in _refused(response, 413)
        assert "Retry-After" not in response.headers
        burst = export([span(5, 1, query="burst"), span(5, 2, 1), span(5, 3, 1)])
        assert post(http, burst).status_code == 200
        with as_user(server, KEY) as admin:
            assert [t["row"]["query"] for t in traces(admin, 1)] == ["burst"]
        if store_kind != "postgresql":
            return  # SQLite's write lock would hold every request's audit record too
        # the writer takes this lock before it stores spans: the queue stays full while held
        store = Store(server.store_url)
        try:
            with store.session() as held:
                write_lock(held.connection(), "ragmeter-traces")
                assert post(http, export([span(6, 1, query="q6")])).status_code == 200
                full = export([span(7, 1, query="later"), span(7, 2, 1), span(7, 3, 1)])
                response = post(http, full)
                assert "[online] max_queued_spans" in _refused(response, 503)
                assert int(response.headers["Retry-After"]) > 0
        finally:
            store.close()
        assert post(http, export([span(7, 1, query="fits")])).status_code == 200
        with as_user(server, KEY) as admin:
            queries = sorted(t["row"]["query"] for t in traces(admin, 3))
            assert queries == ["burst", "fits", "q6"]


def test_spans_past_max_spans_per_trace_are_refused_to_the_exporter(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> None:
    """Spans a trace has no room for (``[online] max_spans_per_trace``, counting the spans
    stored and those waiting in the queue) are answered in ``partial_success``, naming the
    setting, rather than left out silently when they are stored; a root is kept first."""
    home = tmp_path_factory.mktemp("trace-cap")
    (home / "ragmeter.toml").write_text("[online]\nmax_spans_per_trace = 5\n", encoding="utf-8")
    ingest = add_user(home, "collector", "ingest")
    with ServiceProcess(home) as server, as_user(server, ingest) as http:
        response = post(http, export([span(8, n, 1) for n in range(2, 6)]))
        assert response.status_code == 200 and rejected(response) == 0
        with as_user(server, KEY) as admin:
            assert traces(admin, 1)[0]["span_count"] == 4
            late = [span(8, n, 1) for n in range(6, 8)] + [span(8, 1, query="root")]
            response = post(http, export(late))
            assert response.status_code == 200 and rejected(response) == 2
            assert "[online] max_spans_per_trace" in message(response)
            many = [span(9, n, 1) for n in range(2, 9)] + [span(9, 1, query="nine")]
            response = post(http, export(many))
            assert rejected(response) == 3 and "[online] max_spans_per_trace" in message(response)
            found = {t["trace_id"]: t for t in traces(admin, 2)}
            deadline = time.monotonic() + 30
            while found[tid(9)]["span_count"] < 5 and time.monotonic() < deadline:
                found = {t["trace_id"]: t for t in traces(admin, 2)}
            assert found[tid(8)]["span_count"] == found[tid(9)]["span_count"] == 5
            assert found[tid(8)]["row"]["query"] == "root"
            assert found[tid(9)]["row"]["query"] == "nine"
