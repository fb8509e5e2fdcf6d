"""Two ``ragmeter serve`` replicas on one store (a SQLite file, then a PostgreSQL database): a
run belongs to the replica executing it through a lease it renews; killed with kill -9
mid-run, the other replica takes the run over once the lease has passed and finishes it, with
no row lost or scored twice; cancel and resume work from either replica; a dashboard session
opened on one is known to both."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store
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
PARALLEL = 2  # _slow_run's parallel_num: rows a replica judges at once


@pytest.fixture
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer(latency_ms=120) as server:
        yield server


@pytest.fixture
def home(tmp_path: Path, judge: ScriptedJudgeServer, store_url: str) -> Path:
    """The replicas' ``$RAGMETER_HOME``: its default SQLite file, or a PostgreSQL database
    named in its ``ragmeter.toml``."""
    home = tmp_path / "home"
    write_models(home, judge.url)
    with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
        if not store_url.startswith("sqlite"):
            config.write(f'\n[store]\nurl = "{store_url}"\n')
        config.write(f"\n[server]\nrun_lease_seconds = {LEASE}\n")
    return home


def _judged(judge: ScriptedJudgeServer, tag: str) -> list[int]:
    """How many of the judge's chat requests so far (the app's answer and the metric's
    verdicts) carried each row's question."""
    prompts = list(judge.prompts)
    return [sum(f"{tag} question {i} about" in p for p in prompts) for i in range(ROWS)]


def _stored_rows(store_url: str, run_id: str) -> set[int]:
    """The rows with results in the store (read from it directly, not through a replica)."""
    store = Store(store_url)
    try:
        return RunStore(store).finished_rows(run_id)
    finally:
        store.close()


def test_a_killed_replica_s_run_is_taken_over_and_finished_once(
    home: Path, judge: ScriptedJudgeServer, store_url: str
) -> None:
    """After the takeover: every row x metric has exactly one result (none lost, none
    twice); no row stored before the kill was sent to the judge again; and the rows sent
    twice are only those the killed replica had under way (started, not stored): at most
    a batch (one row) per worker being judged and one per worker judged but not yet
    committed, 2 x parallel_num."""
    first, second = ServiceProcess(home).start(), ServiceProcess(home).start()
    try:
        _setup(first)
        with first.client() as http:
            run_id = data(http.post("/evaluate/runs", json=_slow_run("lease")), 202)["run_id"]
            _wait_progress(http, run_id, 4)
        first.kill()  # kill -9: no shutdown hook marks the run, its lease stops being renewed
        killed_at = time.monotonic()
        # the killed replica's last requests (120 ms each) are answered and logged; a lease
        # is renewed every third of it, so no takeover comes within 2 s of the kill
        time.sleep(LEASE / 3)
        stored, before = _stored_rows(store_url, run_id), _judged(judge, "lease")
        assert time.monotonic() - killed_at < LEASE * 2 / 3
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
        after = _judged(judge, "lease")
        assert len(stored) >= 4 and len(judge.prompts) < judge.prompts.maxlen  # none dropped
        (once,) = {after[i] for i in stored}  # a row judged once asks this many times
        assert once > 0 and all(after[i] == before[i] for i in stored)  # none asked again
        again = [i for i in range(ROWS) if after[i] > once]
        under_way = {i for i in range(ROWS) if before[i] and i not in stored}
        assert set(again) <= under_way and len(under_way) <= 2 * PARALLEL, (again, under_way)
        assert all(after[i] >= once for i in range(ROWS))
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


def test_a_dashboard_session_is_known_to_every_replica(home: Path, store_url: str) -> None:
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
        engine = create_engine(store_url)
        with engine.connect() as stored:
            kept = stored.execute(text("SELECT id_hash FROM dashboard_sessions")).all()
        engine.dispose()
        assert all(session_id not in row[0] for row in kept)
    finally:
        first.stop()
        second.stop()
