from __future__ import annotations

import os
from collections.abc import Iterator
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
