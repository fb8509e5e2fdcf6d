"""``ragmeter judge-server``: an OpenAI-compatible server (chat completions and embeddings)
that answers ragmeter's prompts deterministically, with optional latency, injected faults and
pinned answers (``testing.pinned``).

Use it for a dry run that shows requests and tokens before a real model costs money, and in
tests. ``GET /stats`` reports what it served; ``POST /stats/reset`` clears the counters.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.judge.tokens import count_tokens
from ragmeter.judge.transport import SCRIPTED_FINGERPRINT
from ragmeter.testing.agent_play import agent_message
from ragmeter.testing.answers import answer_chat, embed_text, reply_keys
from ragmeter.testing.pinned import PinnedAnswers

__all__ = ["FaultPlan", "ScriptedJudgeServer", "parse_faults"]

FAULT_KINDS = ("malformed", "rate_limit", "server_error", "hang")


@dataclass(frozen=True)
class FaultPlan:
    """Share of chat requests that fail, by kind; the rest are answered normally."""

    malformed: float = 0.0
    rate_limit: float = 0.0
    server_error: float = 0.0
    hang: float = 0.0
    hang_seconds: float = 30.0
    retry_after: float = 1.0
    seed: int = 0

    def pick(self, rng: random.Random) -> str | None:
        draw = rng.random()
        for kind in FAULT_KINDS:
            share = float(getattr(self, kind))
            if draw < share:
                return kind
            draw -= share
        return None


def parse_faults(text: str, **extra: Any) -> FaultPlan:
    """``"malformed=0.3,rate_limit=0.1,server_error=0.05,hang=0.02"`` -> FaultPlan."""
    shares: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if name.strip() not in FAULT_KINDS:
            raise ConfigError(f"unknown fault '{name.strip()}'; known: {', '.join(FAULT_KINDS)}")
        try:
            shares[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(
                f"fault '{name.strip()}' needs a share like 0.1, got {value!r}"
            ) from None
    if sum(shares.values()) > 1 or min(shares.values(), default=0) < 0:
        raise ConfigError("fault shares must be between 0 and 1 and sum to at most 1")
    return FaultPlan(**{**shares, **extra})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # bursts of concurrent clients must not be refused


class ScriptedJudgeServer:
    """The scripted judge on ``host:port`` (port 0 picks a free one); ``url`` ends in ``/v1``."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        latency_ms: float = 0.0,
        faults: FaultPlan | None = None,
        log: Callable[[str], None] | None = None,
        refuse_json_schema: bool = False,
        noise: float = 0.0,
        noise_seed: int = 0,
        pinned: PinnedAnswers | None = None,
    ) -> None:
        if not 0.0 <= noise <= 1.0:
            raise ConfigError(f"noise is a share of verdicts between 0 and 1, not {noise:g}")
        self.latency_s = latency_ms / 1000
        #: share of ragmeter task verdicts flipped, fixed per request and ``noise_seed``: two
        #: servers with other seeds judge like two samples of a model at temperature > 0
        self.noise = noise
        self.noise_seed = noise_seed
        #: outputs and vectors answered as given (``testing.pinned``)
        self.pinned = pinned or PinnedAnswers()
        #: answer 400 to ``response_format: json_schema``, like endpoints without it
        self.refuse_json_schema = refuse_json_schema
        self.faults = faults or FaultPlan()
        self.log = log
        self.stats: Counter[str] = Counter()
        #: the latest chat prompts (messages joined), newest last, for tests to inspect
        self.prompts: deque[str] = deque(maxlen=256)
        #: when each of the latest chat requests arrived (``time.time()``), oldest first: a
        #: test counts what a minute took
        self.arrivals: deque[float] = deque(maxlen=100_000)
        self._lock = threading.Lock()
        self._in_flight = 0
        self._rng = random.Random(self.faults.seed)
        self._httpd = _Server((host, port), _handler(self))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedJudgeServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedJudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.stats)

    def reset(self) -> None:
        with self._lock:
            self.stats.clear()
            self.prompts.clear()
            self.arrivals.clear()

    def enter(self) -> None:
        """A chat request started: track the most ever answered at once (``max_in_flight``)
        and when it arrived."""
        with self._lock:
            self.arrivals.append(time.time())
            self._in_flight += 1
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self._in_flight)

    def leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def count(self, **values: int) -> None:
        with self._lock:
            self.stats.update(values)

    def fault(self) -> str | None:
        with self._lock:
            kind = self.faults.pick(self._rng)
            if kind:
                self.stats[f"fault_{kind}"] += 1
            return kind

    # -- replies --------------------------------------------------------------------------

    def chat(self, body: dict[str, Any]) -> tuple[dict[str, Any], int, int]:
        if body.get("tools"):  # a model asked to act as an agent
            message = agent_message(body)
            content = str(message.get("content") or "") + json.dumps(message.get("tool_calls"))
        else:
            content = answer_chat(
                body, noise=self.noise, seed=self.noise_seed, pinned=self.pinned.outputs
            )
            message = {"role": "assistant", "content": content}
        with self._lock:
            self.prompts.append("\n".join(str(m.get("content") or "") for m in body["messages"]))
        prompt_tokens = sum(count_tokens(str(m.get("content") or "")) for m in body["messages"])
        n = max(1, int(body.get("n") or 1))
        completion_tokens = count_tokens(content) * n
        reply = {
            "id": f"chatcmpl-scripted-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "system_fingerprint": SCRIPTED_FINGERPRINT,
            "choices": [
                {
                    "index": i,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
                for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return reply, prompt_tokens, completion_tokens

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError("input must be a string or a list of strings")
        tokens = sum(count_tokens(t) for t in texts)
        self.count(embedding_requests=1, embedding_inputs=len(texts), embedding_tokens=tokens)
        return {
            "object": "list",
            "model": body.get("model", "scripted"),
            "data": [
                {"object": "embedding", "index": i, "embedding": self._vector(t)}
                for i, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _vector(self, text: str) -> list[float]:
        pinned = self.pinned.embeddings.get(text)
        return list(pinned) if pinned is not None else embed_text(text)


def _handler(server: ScriptedJudgeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/stats"):
                self._send(200, server.snapshot())
            elif self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/").endswith("/stats/reset"):
                server.reset()
                self._send(200, {"reset": True})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, {"error": {"message": "request body is not JSON"}})
                return
            if server.latency_s and not self.path.endswith("/chat/completions"):
                time.sleep(server.latency_s)  # a chat request sleeps while counted in flight
            try:
                if self.path.endswith("/chat/completions"):
                    self._chat(body)
                elif self.path.endswith("/embeddings"):
                    self._send(200, server.embeddings(body))
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": f"bad request: {exc}"}})

        def _chat(self, body: dict[str, Any]) -> None:
            server.enter()
            try:
                if server.latency_s:
                    time.sleep(server.latency_s)
                self._answer_chat(body)
            finally:
                server.leave()

        def _answer_chat(self, body: dict[str, Any]) -> None:
            server.count(chat_requests=1)
            response_format = body.get("response_format") or {}
            if server.refuse_json_schema and response_format.get("type") == "json_schema":
                server.count(refused_json_schema=1)
                message = "response_format type json_schema is not supported"
                self._send(400, {"error": {"message": message}})
                return
            fault = server.fault()
            if fault == "rate_limit":
                headers = {"Retry-After": f"{server.faults.retry_after:g}"}
                self._send(429, {"error": {"message": "rate limited (scripted)"}}, headers)
                return
            if fault == "server_error":
                self._send(500, {"error": {"message": "internal error (scripted)"}})
                return
            if fault == "hang":
                time.sleep(server.faults.hang_seconds)
            reply, prompt_tokens, completion_tokens = server.chat(body)
            content = reply["choices"][0]["message"]["content"]
            if fault == "malformed" and isinstance(content, str):
                for choice in reply["choices"]:
                    choice["message"]["content"] = content[: max(1, len(content) // 2)]
            server.count(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
            if server.log is not None:
                keys = reply_keys(body)
                task = ",".join(keys) if keys else "text"
                server.log(
                    f"chat {task}: prompt {prompt_tokens} tokens, completion "
                    f"{completion_tokens}{f', fault {fault}' if fault else ''}"
                )
            self._send(200, reply)

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a hang past its timeout)

    return Handler
