"""``ragmeter serve`` in a real subprocess on 127.0.0.1, as a user starts it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from ragmeter.client._base import POOL_LIMITS
from ragmeter.config import STORE_URL_ENV
from tests.integration.helpers import RAGMETER

KEY = "test-key-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServiceProcess:
    """Start with ``start()``; ``kill()`` is kill -9; ``api`` is the DB-GPT-style api_base."""

    def __init__(
        self,
        home: Path,
        *,
        keys: str | None = KEY,
        port: int | None = None,
        log_level: str = "warning",
    ) -> None:
        self.home = home
        self.keys = keys
        self.log_level = log_level
        self.port = port or free_port()
        self.proc: subprocess.Popen[str] | None = None
        self._store_env = os.environ.get(STORE_URL_ENV)
        self.log = home / f"serve-{self.port}.log"

    @property
    def store_url(self) -> str:
        """The store the server uses: ``$RAGMETER_STORE_URL`` when it was started (a test on
        PostgreSQL sets it), else the home's SQLite file."""
        return self._store_env or f"sqlite:///{self.home / 'ragmeter.db'}"

    @property
    def store_env(self) -> dict[str, str]:
        """The environment a command needs to work on the server's store."""
        return {STORE_URL_ENV: self.store_url}

    @property
    def url(self) -> str:
        if bool(os.environ.get(STORE_URL_ENV)) != bool(self._store_env):  # see store_kind
            raise AssertionError(
                f"this server uses {self.store_url}, not the test's store: a module-scoped "
                "fixture starting it must depend on store_kind"
            )
        return f"http://127.0.0.1:{self.port}"

    @property
    def api(self) -> str:
        return f"{self.url}/api/v2"

    @property
    def base(self) -> str:
        return f"{self.url}/api/v2/serve"

    def start(self) -> ServiceProcess:
        self.home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "RAGMETER_HOME": str(self.home), "HF_HUB_OFFLINE": "1"}
        env.pop("RAGMETER_API_KEYS", None)
        self._store_env = env.get(STORE_URL_ENV)
        if self.keys:
            env["RAGMETER_API_KEYS"] = self.keys
        args = [*RAGMETER, "serve", "--port", str(self.port), "--log-level", self.log_level]
        with self.log.open("a", encoding="utf-8") as handle:  # the child keeps its own copy
            self.proc = subprocess.Popen(args, env=env, stdout=handle, stderr=handle, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text(encoding='utf-8')}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError(f"server did not start: {self.log.read_text(encoding='utf-8')}")

    def kill(self) -> None:
        """kill -9: no shutdown hook runs."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
            self.proc = None

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def client(self, key: str | None = KEY) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=120, limits=POOL_LIMITS)


def browser(base_url: str) -> httpx.Client:
    """A client that sends its cookies back as a browser does: the dashboard's Secure
    ``__Host-`` cookie too, over http to 127.0.0.1 (loopback is a secure context to browsers;
    httpx sends Secure cookies over https only)."""
    http = httpx.Client(base_url=base_url, timeout=60, limits=POOL_LIMITS)

    def secure_cookies(request: httpx.Request) -> None:
        if pairs := "; ".join(f"{c.name}={c.value}" for c in http.cookies.jar):
            request.headers["Cookie"] = pairs

    http.event_hooks["request"].append(secure_cookies)
    return http


def data(response: httpx.Response, status: int = 200) -> Any:
    """The envelope's data, after checking the status and ``success``."""
    body = response.json()
    assert response.status_code == status, (response.status_code, body)
    assert body["success"] is True, body
    return body["data"]


def failure(response: httpx.Response, status: int) -> str:
    """The envelope's err_msg, after checking the status and that it is a failure."""
    body = response.json()
    assert response.status_code == status, (response.status_code, body)
    assert body["success"] is False, body
    assert set(body) == {"success", "err_code", "err_msg", "data"}
    return str(body["err_msg"])


def wait_run(http: httpx.Client, run_id: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info: dict[str, Any] = data(http.get(f"/evaluate/runs/{run_id}"))
        if info["state"] in ("done", "failed", "cancelled"):
            return info
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


def run_rows(
    http: httpx.Client, name: str, rows: list[dict[str, Any]], metrics: list[str]
) -> dict[str, Any]:
    """Upload ``rows`` as dataset ``name``, evaluate ``metrics`` on it, wait for the run to
    finish and return its info (state done)."""
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    files = {"file": (f"{name}.jsonl", body, "application/x-ndjson")}
    data(http.post("/datasets", params={"name": name}, files=files), 201)
    request = {"scene_key": "dataset", "datasets_name": name, "evaluate_metrics": metrics}
    run_id = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
    info = wait_run(http, run_id)
    assert info["state"] == "done", info
    return info
