"""An HTTP server on 127.0.0.1 that records every request it gets (headers and body), standing
in for the attacker's listener or an internal service. Its replies depend on the path:

- ``/ask``: a normal app reply ``{"answer": ..., "contexts": [...]}``
- ``/huge?mb=N``: a valid JSON reply of N megabytes, streamed
- ``/error``: 500 with a body holding ``BODY_SECRET``
- ``/html``: 200 text/html holding ``BODY_SECRET``
- ``/bigint``: 200 JSON whose answer holds an integer of 5,000 digits (Python refuses to read it)
- ``/redirect?to=URL``: 302 to URL
- anything else: 404
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

BODY_SECRET = "INTERNAL-BODY-7f3a9c"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.seen.append(Seen("POST", self.path, dict(self.headers.items()), body))
        url = urlparse(self.path)
        if url.path == "/ask":
            self._send(200, "application/json", json.dumps(self.server.reply).encode())
        elif url.path == "/huge":
            self._huge(float(parse_qs(url.query).get("mb", ["50"])[0]))
        elif url.path == "/error":
            self._send(500, "text/plain", f"stack trace with {BODY_SECRET}".encode())
        elif url.path == "/html":
            self._send(200, "text/html", f"<html>{BODY_SECRET}</html>".encode())
        elif url.path == "/bigint":
            self._send(200, "application/json", b'{"answer": ' + b"9" * 5000 + b"}")
        elif url.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", parse_qs(url.query)["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send(404, "text/plain", b"no such path")

    do_GET = do_POST

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _huge(self, mb: float) -> None:
        size = int(mb * 1_000_000)
        head, tail = b'{"answer": "', b'", "contexts": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(head) + size + len(tail)))
        self.end_headers()
        try:
            self.wfile.write(head)
            block = b"x" * 65536
            for start in range(0, size, len(block)):
                self.wfile.write(block[: min(len(block), size - start)])
            self.wfile.write(tail)
        except (BrokenPipeError, ConnectionResetError):
            with self.server.lock:
                self.server.cut_short += 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.seen: list[Seen] = []
        self.cut_short = 0
        self.reply: dict[str, Any] = {"answer": "AWEL has three layers.", "contexts": ["AWEL"]}


class Listener:
    """``with Listener() as listener:`` serve in a thread; ``listener.url('/ask')``."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str = "/ask", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    @property
    def seen(self) -> list[Seen]:
        with self._server.lock:
            return list(self._server.seen)

    @property
    def cut_short(self) -> int:
        return self._server.cut_short

    def everything(self) -> str:
        """Every header and body received, as one text to search for leaked secrets."""
        parts = []
        for request in self.seen:
            parts.append(request.path)
            parts.extend(f"{k}: {v}" for k, v in request.headers.items())
            parts.append(request.body.decode("utf-8", "replace"))
        return "\n".join(parts)

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
