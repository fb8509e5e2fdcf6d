"""One endpoint on 127.0.0.1 for the three clients ragmeter retries with: OpenAI-compatible
chat completions and embeddings under ``/v1``, and an HttpApp's ``POST /answer``. It answers
the first requests from a script of failures (status and headers), the rest normally, and
records when each request arrived."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.integration.embedding_server import EmbeddingServer

#: one scripted failure: the status to answer and the headers to send with it
Failure = tuple[int, dict[str, str]]


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class FlakyServer:
    """``failures`` are answered in order, one per request, to any path; then every request
    succeeds. ``arrivals`` holds each request's ``time.monotonic()``."""

    def __init__(self, failures: Iterable[Failure] = ()) -> None:
        self.failures: deque[Failure] = deque(failures)
        self.arrivals: list[float] = []
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def gaps(self) -> list[float]:
        """Seconds between one request's arrival and the next one's."""
        return [b - a for a, b in zip(self.arrivals, self.arrivals[1:], strict=False)]

    def next_failure(self) -> Failure | None:
        with self._lock:
            self.arrivals.append(time.monotonic())
            return self.failures.popleft() if self.failures else None

    def __enter__(self) -> FlakyServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _success(path: str, body: dict[str, Any]) -> dict[str, Any]:
    if path.endswith("/chat/completions"):
        return {
            "id": "chatcmpl-flaky",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "flaky"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "a fine reply"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
        }
    if path.endswith("/embeddings"):
        return EmbeddingServer.reply(body)
    return {"answer": f"the answer to {body.get('query')}", "contexts": ["a context"]}


def _handler(server: FlakyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            failure = server.next_failure()
            if failure is None:
                self._send(200, _success(self.path, body), {})
            else:
                status, headers = failure
                self._send(status, {"error": {"message": f"scripted {status}"}}, headers)

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler
