"""Finding 6: with no API keys the server listens on loopback only, but a web page can still
reach it through DNS rebinding (its own domain made to resolve to 127.0.0.1; a multipart
upload needs no CORS preflight). Such requests carry the page's domain as Host and are refused;
loopback names keep working. A page of another site posting straight to 127.0.0.1 (a form or
a multipart upload: no preflight either) is told apart by the Origin and Sec-Fetch-Site headers
browsers add, and refused too."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from ragmeter.service.middleware import is_loopback_host
from tests.integration.service import ServiceProcess, data, failure


@pytest.fixture(scope="module")
def keyless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path_factory.mktemp("keyless-home"), keys=None) as server:
        yield server


def test_a_rebound_domain_is_refused(keyless: ServiceProcess) -> None:
    evil = {"Host": f"attacker.example:{keyless.port}"}
    message = failure(httpx.get(f"{keyless.base}/evaluate/scenes", headers=evil), 403)
    assert "attacker.example" in message and "loopback" in message
    upload = httpx.post(
        f"{keyless.base}/datasets",
        headers=evil,
        files={"file": ("rows.jsonl", b'{"query": "q"}\n', "application/x-ndjson")},
    )
    failure(upload, 403)
    for host in ("attacker.example", "127.0.0.1.attacker.example", "localhost.attacker.example"):
        failure(httpx.get(f"{keyless.base}/models", headers={"Host": host}), 403)
    with httpx.Client() as http:
        listed = data(http.get(f"{keyless.base}/datasets"))  # the upload never landed
    assert listed["total"] == 0


def test_a_page_of_another_site_cannot_change_anything(keyless: ServiceProcess) -> None:
    upload = {"file": ("rows.jsonl", b'{"query": "q"}\n', "application/x-ndjson")}
    page_requests = [
        {"Origin": "https://attacker.example"},
        {"Origin": "null"},  # a sandboxed frame or a local file
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"},
    ]
    for headers in page_requests:
        message = failure(
            httpx.post(f"{keyless.base}/datasets", headers=headers, files=upload), 403
        )
        assert "another site" in message, (headers, message)
        failure(httpx.post(f"{keyless.base}/evaluate/runs/x/cancel", headers=headers), 403)
    # reading stays possible (a browser keeps the answer from another site's page anyway), and
    # the server's own page, a client or curl change things as before
    assert data(httpx.get(f"{keyless.base}/evaluate/scenes", headers=page_requests[0]))
    same = {"Origin": f"http://127.0.0.1:{keyless.port}", "Sec-Fetch-Site": "same-origin"}
    data(httpx.post(f"{keyless.base}/datasets", headers=same, files=upload), 201)
    listed = data(httpx.get(f"{keyless.base}/datasets"))
    assert listed["total"] == 1


def test_loopback_names_work(keyless: ServiceProcess) -> None:
    for host in (f"127.0.0.1:{keyless.port}", f"localhost:{keyless.port}", "localhost", "[::1]"):
        assert data(httpx.get(f"{keyless.base}/evaluate/scenes", headers={"Host": host}))


def test_with_keys_any_host_name_may_be_used(tmp_path_factory: pytest.TempPathFactory) -> None:
    with ServiceProcess(tmp_path_factory.mktemp("keyed-home")) as server:
        named = server.client()
        named.headers["Host"] = "ragmeter.internal.example"
        with named:
            assert data(named.get("/evaluate/scenes"))


@pytest.mark.parametrize(
    ("header", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST:5670", True),
        ("127.0.0.1:5670", True),
        ("127.5.6.7", True),
        ("[::1]:5670", True),
        ("app.localhost", True),
        ("localhost.", True),
        ("", False),
        ("0.0.0.0", False),
        ("10.0.0.1", False),
        ("evil.com", False),
        ("localhost.evil.com", False),
        ("127.0.0.1.nip.io", False),
        ("[::ffff:8.8.8.8]", False),
    ],
)
def test_which_host_headers_are_loopback(header: str, loopback: bool) -> None:
    assert is_loopback_host(header) is loopback
