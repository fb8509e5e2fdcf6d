"""A small OpenAI-compatible embeddings server on 127.0.0.1 for the tests.

Vectors are hashed bags of words (64 dims): texts sharing words get similar vectors, so
similarity metrics computed through it mean something. ``model="broken"`` answers HTTP 500.
Replies list the vectors in reverse order to check that clients sort by ``index``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DIM = 64


def hashed_vector(text: str) -> list[float]:
    vector = np.zeros(DIM, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return vector.tolist()


class EmbeddingServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                if not self.path.endswith("/embeddings"):
                    self._send(404, {"error": {"message": "not found"}})
                elif body.get("model") == "broken":
                    self._send(500, {"error": {"message": "model crashed"}})
                else:
                    self._send(200, server.reply(body))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @staticmethod
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for i, text in enumerate(texts):
            vector: Any = hashed_vector(text)
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode()
            data.append({"object": "embedding", "index": i, "embedding": vector})
        tokens = sum(len(t.split()) for t in texts)
        return {
            "object": "list",
            "data": data[::-1],
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
