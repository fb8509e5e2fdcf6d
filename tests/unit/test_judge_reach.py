"""The judge's reach check (``GET /models`` before the first request) over real sockets on
127.0.0.1: any HTTP answer is "reached"; no listener, a listener that is not HTTP, one that
never answers, a bad URL or a header value that would split the request are not."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest

from ragmeter.judge._reach import answers_http
from ragmeter.testing import ScriptedJudgeServer


def _reached(url: str, headers: dict[str, str] | None = None, within: float = 5.0) -> bool:
    return asyncio.run(answers_http(url, headers or {}, within))


class _RawListener:
    """A TCP listener that replies ``reply`` (or nothing) to whatever it receives."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.received = b""
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:  # closed before anyone connected
            return
        with conn:
            conn.settimeout(3)
            try:
                self.received = conn.recv(65536)
                if self.reply is not None:
                    conn.sendall(self.reply)
                else:
                    conn.recv(1)  # hold the connection until the client gives up
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


def test_an_http_endpoint_is_reached(judge: ScriptedJudgeServer) -> None:
    assert _reached(judge.url.rstrip("/") + "/models", {"Authorization": "Bearer k"})


def test_any_http_status_counts_as_reached() -> None:
    listener = _RawListener(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    try:
        assert _reached(f"http://127.0.0.1:{listener.port}/v1/models", {"X-Key": "v"})
    finally:
        listener.close()
    request = listener.received.decode()
    assert request.startswith("GET /v1/models HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{listener.port}\r\n" in request and "X-Key: v\r\n" in request


def test_no_listener_a_non_http_reply_or_silence_is_not_reached() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    assert not _reached(f"http://127.0.0.1:{port}/models")
    garbage = _RawListener(b"SSH-2.0-OpenSSH\r\n")
    try:
        assert not _reached(f"http://127.0.0.1:{garbage.port}/models")
    finally:
        garbage.close()
    silent = _RawListener(None)
    try:
        assert not _reached(f"http://127.0.0.1:{silent.port}/models", within=0.3)
    finally:
        silent.close()


def test_bad_urls_and_header_splitting_are_refused_without_sending() -> None:
    assert not _reached("ftp://127.0.0.1/models")
    assert not _reached("http:///models")
    assert not _reached("http://127.0.0.1:99999/models")
    listener = _RawListener(b"HTTP/1.1 200 OK\r\n\r\n")
    try:
        url = f"http://127.0.0.1:{listener.port}/models"
        assert not _reached(url, {"Authorization": "Bearer k\r\nX-Injected: 1"}, within=0.5)
    finally:
        listener.close()
    assert b"X-Injected" not in listener.received
