"""A user's HttpApp endpoint on 127.0.0.1 for the run-engine tests: it answers every query,
slowly for some, with 503 for others while told to, and records what it was asked."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: the contexts every answer carries (rows whose reference is one of them hit)
CONTEXTS = ["AWEL has an operator layer.", "AWEL runs on Ray."]


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class AppServer:
    """POST ``{"query": q}`` -> ``{"answer": ..., "contexts": CONTEXTS}``. Queries in ``slow``
    wait that many seconds; queries in ``failing`` get 503 while ``fail`` is set.
    ``asked`` counts requests per query; ``answered`` holds an Event per answered query."""

    def __init__(
        self, *, slow: dict[str, float] | None = None, failing: set[str] | None = None
    ) -> None:
        self.slow = dict(slow or {})
        self.failing = set(failing or ())
        self.fail = threading.Event()
        self.fail.set()
        self.asked: Counter[str] = Counter()
        self.answered: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/answer"

    def event(self, query: str) -> threading.Event:
        with self._lock:
            return self.answered.setdefault(query, threading.Event())

    def reply(self, query: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.asked[query] += 1
        time.sleep(self.slow.get(query, 0.0))
        if query in self.failing and self.fail.is_set():
            return 503, {"error": "scripted outage"}
        return 200, {"answer": f"the answer to {query}", "contexts": CONTEXTS}

    def __enter__(self) -> AppServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler(server: AppServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            query = str(json.loads(self.rfile.read(length) or b"{}").get("query", ""))
            status, payload = server.reply(query)
            body = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass
            if status == 200:
                server.event(query).set()

    return Handler
