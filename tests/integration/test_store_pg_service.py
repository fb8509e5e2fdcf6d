"""``ragmeter serve`` on a PostgreSQL store (``[store] url = "postgresql+psycopg://..."``): a run
over the API end to end, a server killed with kill -9 mid-run and started again, the run
resumed to its end with no row lost or scored twice, and the dashboard's run list."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import ServiceProcess, data, wait_run
from tests.integration.test_service_runs import (
    ROWS,
    _all_results,
    _check_complete,
    _run_under_way,
    _slow_run,
)
from tests.pg import PostgresServer


@pytest.fixture
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer(latency_ms=120) as server:
        yield server


def test_a_service_on_postgresql_runs_survives_kill_9_and_lists_its_runs(
    tmp_path: Path, postgres: PostgresServer, judge: ScriptedJudgeServer
) -> None:
    home = tmp_path / "home"
    write_models(home, judge.url)
    url = postgres.database()
    with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
        config.write(f'\n[store]\nurl = "{url}"\n')
    server = ServiceProcess(home).start()
    try:
        run_id = _run_under_way(server, {**_slow_run("pg"), "evaluate_code": "pg-run"}, 6)
        server.kill()
        server.start()
        with server.client() as http:
            after = data(http.get(f"/evaluate/runs/{run_id}"))
            assert (after["state"], after["resumable"]) == ("failed", True)
            kept = _all_results(http, run_id)
            assert len(kept) == 2 * after["progress"]["done"] and kept
            data(http.post(f"/evaluate/runs/{run_id}/resume"), 202)
            info = wait_run(http, run_id)
            assert info["state"] == "done" and info["progress"] == {"done": ROWS, "total": ROWS}
            items = _all_results(http, run_id)
            quick = data(http.post("/evaluate/runs", json=_slow_run("quick", rows=3)), 202)
            assert wait_run(http, quick["run_id"])["state"] == "done"
            # the dashboard's run list: newest first, with each metric's summary
            listed = data(http.get("/evaluate/runs", params={"limit": 20, "summary": "true"}))
            rows = data(http.get(f"/evaluate/runs/{run_id}/rows", params={"limit": 5}))
    finally:
        server.stop()
    _check_complete(items, ROWS)
    done_before = {k["row_index"] for k in kept}
    assert [i for i in items if i["row_index"] in done_before] == kept  # untouched
    assert [r["run_id"] for r in listed["items"]] == [quick["run_id"], run_id]
    assert listed["total"] == 2
    summary = listed["items"][1]["summary"]["AnswerRelevancyMetric"]
    assert summary["count"] == ROWS and summary["ci95_low"] <= summary["mean"]
    assert rows["total"] == ROWS and len(rows["items"]) == 5
    assert not (home / "ragmeter.db").exists()  # everything went to PostgreSQL
