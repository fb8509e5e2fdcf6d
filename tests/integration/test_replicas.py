"""Two ``ragmeter serve`` replicas on one store: a run belongs to the replica executing it
through a lease it renews; killed with kill -9 mid-run, the other replica takes the run over
once the lease has passed and finishes it, with no row lost or scored twice; cancel and
resume work from either replica; a dashboard session opened on one is known to both."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import KEY, ServiceProcess, browser, data, wait_run
from tests.integration.test_service_runs import (
    _all_results,
    _check_complete,
    _setup,
    _slow_run,
    _wait_progress,
)

LEASE = 3  # seconds: [server] run_lease_seconds of both replicas
ROWS = 24


@pytest.fixture
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer(latency_ms=120) as server:
        yield server


@pytest.fixture
def home(tmp_path: Path, judge: ScriptedJudgeServer) -> Path:
    home = tmp_path / "home"
    write_models(home, judge.url)
    with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n[server]\nrun_lease_seconds = {LEASE}\n")
    return home


def test_a_killed_replica_s_run_is_taken_over_and_finished_once(home: Path) -> None:
    first, second = ServiceProcess(home).start(), ServiceProcess(home).start()
    try:
        _setup(first)
        with first.client() as http:
            run_id = data(http.post("/evaluate/runs", json=_slow_run("lease")), 202)["run_id"]
            _wait_progress(http, run_id, 4)
        first.kill()  # kill -9: no shutdown hook marks the run, its lease stops being renewed
        killed_at = time.monotonic()
        with second.client() as http:
            listed = data(http.get(f"/evaluate/runs/{run_id}"))
            # another replica's run is left to its lease, never marked interrupted by a read
            assert listed["state"] in ("running", "pending"), listed
            info = wait_run(http, run_id)
            took = time.monotonic() - killed_at
            items = _all_results(http, run_id)
        assert info["state"] == "done" and info["progress"] == {"done": ROWS, "total": ROWS}
        _check_complete(items, ROWS)  # every row x metric once: none lost, none twice
        assert took >= LEASE * 0.5  # taken over after the lease passed, not before
        log = second.log.read_text(encoding="utf-8")
        assert f"run {run_id}: its server's lease passed; taken over here" in log
    finally:
        first.stop()
        second.stop()


def test_cancel_and_resume_work_from_either_replica(home: Path) -> None:
    first, second = ServiceProcess(home).start(), ServiceProcess(home).start()
    try:
        _setup(first)
        with first.client() as http:
            run_id = data(http.post("/evaluate/runs", json=_slow_run("either")), 202)["run_id"]
            _wait_progress(http, run_id, 2)
        with second.client() as http:  # cancelled by the replica not executing it
            data(http.post(f"/evaluate/runs/{run_id}/cancel"))
        with first.client() as http:
            stopped = wait_run(http, run_id)
        assert stopped["state"] == "cancelled" and stopped["resumable"]
        assert stopped["progress"]["done"] < ROWS
        with second.client() as http:  # resumed, and executed, by the other one
            data(http.post(f"/evaluate/runs/{run_id}/resume"), 202)
            done = wait_run(http, run_id)
            items = _all_results(http, run_id)
        assert done["state"] == "done" and done["progress"] == {"done": ROWS, "total": ROWS}
        _check_complete(items, ROWS)
    finally:
        first.stop()
        second.stop()


def test_a_dashboard_session_is_known_to_every_replica(home: Path) -> None:
    """A browser signed in on one replica (behind a load balancer its next request may go
    to the other) is signed in on both; signing out on either ends it on both, and the store
    keeps no session id a reader could replay, only its hash."""
    first, second = ServiceProcess(home).start(), ServiceProcess(home).start()
    try:
        with browser(first.url) as page:
            token = data(page.post("/ui/session", json={"key": KEY}))["csrf_token"]
            cookies = dict(page.cookies)
        with browser(second.url) as other:
            other.cookies.update(cookies)
            state = data(other.get("/ui/session"))
            assert state["signed_in"] and state["csrf_token"] == token
            assert other.get("/api/v2/serve/evaluate/runs").status_code == 200
            data(other.post("/ui/logout", headers={"X-CSRF-Token": token}))
        with browser(first.url) as page:
            page.cookies.update(cookies)
            assert page.get("/api/v2/serve/evaluate/runs").status_code == 401
        (session_id,) = cookies.values()
        stored = sqlite3.connect(home / "ragmeter.db")
        kept = stored.execute("SELECT id_hash FROM dashboard_sessions").fetchall()
        stored.close()
        assert all(session_id not in row[0] for row in kept)
    finally:
        first.stop()
        second.stop()
