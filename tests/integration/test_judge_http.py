"""The judge's own HTTP transport against real endpoints on 127.0.0.1: what it sends (the key
as a bearer token, the body OpenAI's API takes), what it makes of an error status (the
status, type and size, never its body; a refused key or an unknown model ends the run at the first request),
and that it never follows a redirect, which would carry the key and the prompt elsewhere."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ragmeter.errors import JudgeError
from ragmeter.judge import JudgeEngine, JudgeSettings
from ragmeter.judge.usage import Usage
from tests.integration.flaky_server import FlakyServer


class _Recorder:
    """An endpoint that answers every POST with ``status`` (and ``headers``) and keeps what
    it was sent."""

    def __init__(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                recorder.requests.append((self.path, dict(self.headers), body))
                reply = {
                    "choices": [{"message": {"role": "assistant", "content": '{"ok": true}'}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2},
                }
                data = json.dumps(reply).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    server = _Recorder()
    yield server
    server.close()


async def _ask(url: str, **settings: Any) -> str:
    engine = JudgeEngine(JudgeSettings(model="judge-1", base_url=url, **settings))
    try:
        return await engine.complete("Say something.")
    finally:
        await engine.aclose()


async def test_the_request_is_openais_chat_completion_with_the_key_as_a_bearer_token(
    recorder: _Recorder,
) -> None:
    reply = await _ask(f"{recorder.url}/v1/", api_key="sk-test-123", temperature=0.3)
    assert reply == '{"ok": true}'
    ((path, headers, body),) = recorder.requests
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-test-123"
    assert headers["Content-Type"] == "application/json"
    assert body == {
        "model": "judge-1",
        "messages": [{"role": "user", "content": "Say something."}],
        "temperature": 0.3,
    }  # free text: no response_format at all


async def test_a_structured_question_sends_its_json_schema(recorder: _Recorder) -> None:
    from pydantic import BaseModel

    class Verdict(BaseModel):
        ok: bool

    engine = JudgeEngine(JudgeSettings(model="judge-1", base_url=f"{recorder.url}/v1"))
    try:
        verdict = await engine.ask("Judge.", "Is it fine?", Verdict, Usage())
    finally:
        await engine.aclose()
    assert verdict.ok is True
    body = recorder.requests[0][2]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"] == {
        "ok": {"title": "Ok", "type": "boolean"}
    }


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (401, r"refused the API key: HTTP 401 \(application/json, \d+ bytes\)"),
        (403, r"refused the API key: HTTP 403 \(application/json, \d+ bytes\)"),
    ],
)
async def test_a_refused_key_ends_at_the_first_request_with_its_status(
    status: int, says: str
) -> None:
    with FlakyServer([(status, {})] * 5) as server:
        with pytest.raises(JudgeError, match=says):
            await _ask(f"{server.url}/v1", max_retries=3)
        assert len(server.arrivals) == 1


async def test_an_unknown_model_names_the_endpoint_without_its_password() -> None:
    with FlakyServer([(404, {})] * 5) as server:
        url = server.url.replace("http://", "http://user:hunter2@") + "/v1"
        with pytest.raises(JudgeError) as caught:
            await _ask(url, max_retries=3)
        assert len(server.arrivals) == 1
    message = str(caught.value)
    assert "HTTP 404 (application/json" in message and "hunter2" not in message
    assert "scripted 404" not in message  # the body is never told


async def test_a_redirect_is_not_followed(recorder: _Recorder) -> None:
    """The endpoint sends the client on to another host: nothing goes there, and the error
    says where the judge tried to send it, without the password in that address."""
    elsewhere = recorder.url.replace("http://", "http://user:hunter2@")
    moved = _Recorder(302, {"Location": f"{elsewhere}/v1/chat/completions"})
    try:
        with pytest.raises(JudgeError, match="redirects to") as caught:
            await _ask(f"{moved.url}/v1", max_retries=3)
    finally:
        moved.close()
    assert len(moved.requests) == 1 and recorder.requests == []
    assert "hunter2" not in str(caught.value)
