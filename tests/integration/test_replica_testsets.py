"""Test set generations on two ``ragmeter serve`` replicas sharing one store (a SQLite file, a
PostgreSQL database): a generation
started on one is shown by the other as it runs, counts against ``[server]
max_testset_jobs`` on both, is cancelled from the other (its server stops at its next look),
and one whose server was killed with kill -9 reads as failed once its lease has passed, its
rows kept so far staying in its dataset."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.client import Client
from ragmeter.demo import demo_corpus_path
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import KEY, ServiceProcess, data, failure

LEASE = 8  # seconds: [server] run_lease_seconds of both replicas (30 by default); with 3 s,
# a generation just started in a fresh server read as gone (its lease passed before the first
# renewal) on a loaded machine, in CI and here
SLOW = 200  # questions: more than any test waits for


@pytest.fixture
def home(tmp_path: Path, store_url: str) -> Iterator[Path]:
    """The replicas' ``$RAGMETER_HOME``: its default SQLite file, or a PostgreSQL database
    named in its ``ragmeter.toml``."""
    home = tmp_path / "home"
    with ScriptedJudgeServer(latency_ms=300) as judge:
        write_models(home, judge.url)
        with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
            if not store_url.startswith("sqlite"):
                config.write(f'\n[store]\nurl = "{store_url}"\n')
            config.write(f"\n[server]\nrun_lease_seconds = {LEASE}\nmax_testset_jobs = 1\n")
        yield home


@pytest.fixture
def replicas(home: Path) -> Iterator[tuple[ServiceProcess, ServiceProcess]]:
    first, second = ServiceProcess(home).start(), ServiceProcess(home).start()
    try:
        corpus = demo_corpus_path()
        files = sorted(corpus.rglob("*.md"))
        with Client(first.api, api_key=KEY) as client:
            client.spaces.create("garden", embedder="hashed")
            client.spaces.upload("garden", files, [str(f.relative_to(corpus)) for f in files])
        yield first, second
    finally:
        first.stop()
        second.stop()


def _start(http: httpx.Client, name: str) -> dict[str, Any]:
    asked = {"size": SLOW, "judge_model": "scripted", "name": name}
    job: dict[str, Any] = data(http.post("/knowledge/spaces/garden/testsets", json=asked), 202)
    return job


def _until(http: httpx.Client, job_id: str, done: Any, within: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        job: dict[str, Any] = data(http.get(f"/knowledge/testsets/{job_id}"))
        if done(job):
            return job
        assert time.monotonic() < deadline, f"generation {job_id} stayed {job}"
        time.sleep(0.2)


def test_a_generation_is_shown_counted_and_cancelled_on_either_replica(
    replicas: tuple[ServiceProcess, ServiceProcess],
) -> None:
    first, second = replicas
    with first.client() as one, second.client() as other:
        job = _start(one, "shared")
        seen = _until(other, job["id"], lambda j: j["accepted"] >= 1)
        assert seen["state"] == "running" and seen["dataset_name"] == "shared"
        # one slot on the servers together: the other replica refuses a second generation
        message = failure(other.post("/knowledge/spaces/garden/testsets", json={"size": 1, "judge_model": "scripted"}), 429)  # fmt: skip
        assert "max_testset_jobs" in message
        failure(other.delete("/datasets/shared"), 409)  # being written, seen from the other
        data(other.post(f"/knowledge/testsets/{job['id']}/cancel"))
        ended = _until(one, job["id"], lambda j: j["state"] != "running", within=15)
        assert ended["state"] == "cancelled", ended
        rows = data(other.get("/datasets/shared/rows"))
        assert rows["total"] == ended["accepted"] >= 1  # the rows kept so far stay
        again = _start(other, "after")  # the slot is free on both
        data(one.post(f"/knowledge/testsets/{again['id']}/cancel"))
        stopped = _until(other, again["id"], lambda j: j["state"] != "running")
        assert stopped["state"] == "cancelled", {
            k: stopped.get(k) for k in ("state", "error", "message", "reason")
        }


def test_a_killed_replica_s_generation_ends_failed_after_its_lease(
    replicas: tuple[ServiceProcess, ServiceProcess],
) -> None:
    first, second = replicas
    with first.client() as one, second.client() as other:
        job = _start(one, "orphan")
        _until(one, job["id"], lambda j: j["accepted"] >= 1)
        first.kill()  # kill -9: it never says the generation ended
        killed_at = time.monotonic()
        assert data(other.get(f"/knowledge/testsets/{job['id']}"))["state"] == "running"
        ended = _until(other, job["id"], lambda j: j["state"] != "running", within=LEASE + 10)
        assert time.monotonic() - killed_at >= LEASE - 1.5  # not before its lease passed
        assert ended["state"] == "failed" and "lease" in (ended["error"] or ""), ended
        rows = data(other.get("/datasets/orphan/rows"))
        assert rows["total"] >= 1  # what it kept stays
        _start(other, "next")  # its slot is free
