"""A stand-in for your own RAG service, to try the app scene with an HttpApp offline.

It answers ``POST /ask {"query": ...}`` with ``{"answer": ..., "sources": [...]}``: the top 3
chunks of a ragmeter knowledge space (hybrid retrieval), the answer being the best chunk's
text. Start it, register it, evaluate it::

    python examples/http_rag_server.py --space dbgpt --port 8800 &
    ragmeter app add docs-http --url http://127.0.0.1:8800/ask --contexts-key sources
    ragmeter eval qa.jsonl --app docs-http -m faithfulness --judge-model scripted
"""

from __future__ import annotations

import argparse
import asyncio
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.knowledge.spaces import KnowledgeBase


def make_handler(searcher: SpaceSearcher) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                query = str(body["query"])
            except (ValueError, KeyError):
                self._send(400, {"error": 'send {"query": "..."}'})
                return
            (hits,) = asyncio.run(searcher.search([query], top_k=3, retriever="hybrid"))
            sources = [hit.content for hit in hits]
            answer = sources[0].split(": ", 1)[-1] if sources else "I do not know."
            self._send(200, {"answer": answer, "sources": sources})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", required=True, help="knowledge space to answer from")
    parser.add_argument("--port", type=int, default=8800)
    args = parser.parse_args()
    searcher = SpaceSearcher(KnowledgeBase(), args.space)
    ThreadingHTTPServer.request_queue_size = 64  # evaluations send many requests at once
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(searcher))
    print(f"answering from space '{args.space}' at http://127.0.0.1:{args.port}/ask")
    server.serve_forever()


if __name__ == "__main__":
    main()
