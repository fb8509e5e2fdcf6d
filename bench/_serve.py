"""A real ``ragmeter serve`` on 127.0.0.1 for the service benchmarks, with an API key."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

__all__ = ["KEY", "free_port", "start_server"]

KEY = "bench-key"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(
    home: Path,
    port: int,
    settings: str,
    src: str | None = None,
    wait_s: float = 60.0,
    key: str | None = KEY,
) -> subprocess.Popen[bytes]:
    """``ragmeter serve`` with ``settings`` as its ragmeter.toml (``src``: the sources to run,
    e.g. a baseline checkout's), once it answers /health; ``key`` None: no API keys (the
    server then answers loopback only)."""
    (home / "ragmeter.toml").write_text(settings, encoding="utf-8")
    env = {**os.environ, "RAGMETER_HOME": str(home)}
    env.pop("RAGMETER_API_KEYS", None)
    if key is not None:
        env["RAGMETER_API_KEYS"] = key
    if src is not None:
        env["PYTHONPATH"] = src
    args = [sys.executable, "-m", "ragmeter", "serve", "--port", str(port)]
    proc = subprocess.Popen([*args, "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")
