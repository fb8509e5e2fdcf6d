"""Issue 26, finding 11: a judge's error answer was quoted into the run's results, which every
key reads; an HTML error page carrying ``db_password=...`` was. A judge error is now told by
its status, content type and size, never by its body: against a loopback judge answering an
error page that holds a secret, directly through the engine and through a real
``ragmeter serve`` run; an embedding server's error page likewise."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ragmeter.errors import JudgeError
from ragmeter.judge import JudgeEngine, JudgeSettings
from tests.integration.service import ServiceProcess, data, wait_run

pytestmark = pytest.mark.both_stores

SECRET = "db_password=hunter2-s3cret"
PAGE = (
    "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>"
    f"<pre>upstream connect error; DSN postgresql://app@db/prod?{SECRET}</pre></body></html>"
).encode()


#: an OpenAI-style error whose message quotes what it should not
JSON_ERROR = json.dumps(
    {"error": {"message": f"backend failed: {SECRET}", "type": "server_error"}}
).encode()


class _ErrorPage:
    """A judge endpoint on 127.0.0.1 answering every request with ``status`` and ``body``."""

    def __init__(
        self, status: int, kind: str = "text/html; charset=utf-8", body: bytes = PAGE
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def error_page() -> Iterator[_ErrorPage]:
    server = _ErrorPage(400)
    yield server
    server.close()


@pytest.mark.parametrize("status", [400, 401, 404, 502])
async def test_the_engines_error_tells_status_type_and_size_never_the_body(status: int) -> None:
    server = _ErrorPage(status)
    engine = JudgeEngine(JudgeSettings(model="judge-1", base_url=server.url, max_retries=0))
    try:
        with pytest.raises(JudgeError) as caught:
            await engine.complete("Say something.")
    finally:
        await engine.aclose()
        server.close()
    message = str(caught.value)
    assert "hunter2" not in message and "Bad Gateway" not in message and "<" not in message
    assert f"HTTP {status} (text/html, {len(PAGE):,} bytes)" in message


@pytest.mark.parametrize("status", [400, 502])
async def test_an_embedding_servers_error_page_is_not_told_either(status: int) -> None:
    from ragmeter.embeddings.openai_compat import OpenAIEmbedder
    from ragmeter.errors import EmbeddingError

    server = _ErrorPage(status, "application/json", JSON_ERROR)
    embedder = OpenAIEmbedder("e", base_url=server.url, api_key="k", max_retries=0)
    try:
        with pytest.raises(EmbeddingError) as caught:
            await embedder.embed(["a text"])
    finally:
        await embedder.aclose()
        server.close()
    message = str(caught.value)
    assert "hunter2" not in message and "backend failed" not in message
    size = f"{len(JSON_ERROR):,} bytes"
    assert f"HTTP {status} (application/json, {size}), error type 'server_error'" in message


def test_a_runs_results_never_show_the_judges_error_page(
    tmp_path: Path, error_page: _ErrorPage
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ragmeter.toml").write_text(
        f'[models.leaky]\nbase_url = "{error_page.url}"\nmodel = "leaky"\n', encoding="utf-8"
    )
    rows = [{"query": "What is AWEL?", "response": "A language.", "retrieved_contexts": ["x"]}]
    body = {
        "scene_key": "dataset",
        "evaluate_metrics": ["faithfulness"],
        "datasets": rows,
        "context": {"model": "leaky"},
    }
    with ServiceProcess(home) as server, server.client() as http:
        run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
        run = wait_run(http, run_id)
        results = http.get(f"/evaluate/runs/{run_id}/results").text
        page = http.get(f"/evaluate/runs/{run_id}/rows").text
        row = http.get(f"/evaluate/runs/{run_id}/rows/0").text
    shown = " ".join([str(run), results, page, row])
    assert "hunter2" not in shown and "db_password" not in shown
    assert "HTTP 400 (text/html" in shown  # the failure is told
