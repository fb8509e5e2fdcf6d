from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.embedding_server import EmbeddingServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as server:
        yield server


@pytest.fixture
def judge_server() -> Iterator[ScriptedJudgeServer]:
    """The scripted judge on a free port of 127.0.0.1, in this process."""
    with ScriptedJudgeServer() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$RAGMETER_HOME`` (store, config) for this test."""
    path = tmp_path / "home"
    monkeypatch.setenv("RAGMETER_HOME", str(path))
    return path


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A Ray cluster of 2 CPUs on this machine, for one test module; its address (for other
    processes). ``ray`` is imported here only, so modules that do not ask for it never load it."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class RayHead:
    """A Ray cluster started as a user does (``ray start --head``), with token authentication:
    its Ray Client address, its token file, Ray's temporary folder (where ``auto`` finds it)."""

    client: str
    token: Path
    tmpdir: Path

    def client_logs(self) -> str:
        """The ends of the Ray Client servers' logs (one server a connection), for a failure."""
        logs = sorted((self.tmpdir / "ray" / "session_latest" / "logs").glob("ray_client_server*"))
        return "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            for log in logs
        )

    def env(self, *, mode: bool = True) -> dict[str, str]:
        """What a ragmeter command needs to reach it: the token (and, with ``mode``,
        ``RAY_AUTH_MODE=token``, which Ray asks for on an explicit address), and the folder
        ``auto`` reads the cluster's address from; no address left by another cluster."""
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
        env.update(RAY_AUTH_TOKEN_PATH=str(self.token), RAY_TMPDIR=str(self.tmpdir))
        if mode:
            env["RAY_AUTH_MODE"] = "token"
        return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def ray_head() -> Iterator[RayHead]:
    """``ray start --head --block`` on 127.0.0.1 (2 CPUs, free ports, a token of its own) in a
    process group of its own, for one test module; the group is killed after."""
    tmpdir = Path(tempfile.mkdtemp(prefix="ragmeter-ray-"))  # short: Ray's sockets live in it
    token = tmpdir / "token"
    token.write_text(uuid.uuid4().hex, encoding="utf-8")
    port, client_port = _free_port(), _free_port()
    head = RayHead(f"ray://127.0.0.1:{client_port}", token, tmpdir)
    env = {**head.env(), "RAY_USAGE_STATS_ENABLED": "0"}
    ray_cli = Path(sys.executable).with_name("ray")
    command = [str(ray_cli), "start", "--head", "--block", "--node-ip-address", "127.0.0.1"]
    command += ["--port", str(port), "--ray-client-server-port", str(client_port)]
    command += ["--num-cpus", "2", "--include-dashboard=false", "--disable-usage-stats"]
    log = (tmpdir / "start.log").open("wb")
    started = subprocess.Popen(
        command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 90
        while not _listening(client_port) or not (tmpdir / "ray" / "ray_current_cluster").exists():
            assert started.poll() is None, (tmpdir / "start.log").read_text(errors="replace")
            assert time.monotonic() < deadline, "ray start --head did not come up in 90 s"
            time.sleep(0.2)
        yield head
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(started.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            started.wait(5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(started.pid, signal.SIGKILL)  # what the group left running
        started.wait()
        log.close()
        shutil.rmtree(tmpdir, ignore_errors=True)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0
