"""Runs over HTTP: created at once, polled, paged, cancelled and resumed; a server killed with
kill -9 mid-run loses no finished row and redoes none after it is started again."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.client import Client
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, NOTES_AWEL, json_lines, run, write_models
from tests.integration.service import KEY, ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

ROWS = 24


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer(latency_ms=120) as server:
        yield server


def _setup(server: ServiceProcess) -> None:
    with server.client() as http:
        data(http.post("/knowledge/spaces", json={"name": "awel", "embedder": "hashed"}), 201)
        files = [
            ("files", ("awel.md", GUIDE_AWEL.encode(), "text/markdown")),
            ("files", ("notes.md", NOTES_AWEL.encode(), "text/markdown")),
        ]
        data(http.post("/knowledge/spaces/awel/documents", files=files))
        app = {"name": "bot", "config": {"kind": "rag", "space": "awel", "model": "scripted"}}
        data(http.post("/apps", json=app), 201)


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str, judge: ScriptedJudgeServer
) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("runs-home")
    write_models(home, judge.url)
    with ServiceProcess(home) as server:
        _setup(server)
        yield server


def _slow_run(tag: str, rows: int = ROWS, parallel: int = 2) -> dict[str, Any]:
    """An app run: each row asks the app's model, then the judge (120 ms each)."""
    return {
        "scene_key": "app",
        "scene_value": "bot",
        "context": {"model": "scripted"},
        "evaluate_metrics": ["AnswerRelevancyMetric", "RetrieverHitRateMetric"],
        "datasets": [
            {"query": f"{tag} question {i} about AWEL layers", "doc_name": "awel.md"}
            for i in range(rows)
        ],
        "parallel_num": parallel,
    }


def _wait_progress(http: httpx.Client, run_id: str, at_least: int) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info: dict[str, Any] = data(http.get(f"/evaluate/runs/{run_id}"))
        if info["progress"]["done"] >= at_least:
            return info
        time.sleep(0.05)
    raise AssertionError("the run made no progress")


def _run_under_way(server: ServiceProcess, body: dict[str, Any], rows_done: int) -> str:
    """Set the server up, start a run and return its id once ``rows_done`` rows are stored."""
    _setup(server)
    with server.client() as http:
        run_id: str = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
        _wait_progress(http, run_id, rows_done)
    return run_id


def _all_results(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    page = data(http.get(f"/evaluate/runs/{run_id}/results", params={"limit": 1000}))
    assert page["total"] == len(page["items"])
    items: list[dict[str, Any]] = page["items"]
    return items


def _check_complete(items: list[dict[str, Any]], rows: int) -> None:
    pairs = [(r["row_index"], r["metric_name"]) for r in items]
    assert len(pairs) == len(set(pairs)) == rows * 2  # every row x metric once, none twice
    assert {r for r, _ in pairs} == set(range(rows))
    for item in items:
        assert item["score"] is not None or item["error"], item


def test_create_returns_at_once_then_progresses_to_done(service: ServiceProcess) -> None:
    with service.client() as http:
        started = time.monotonic()
        created = data(http.post("/evaluate/runs", json=_slow_run("quick", rows=6)), 202)
        assert time.monotonic() - started < 2.0  # 6 rows x 240 ms would take longer
        assert created["state"] in ("pending", "running")
        info = wait_run(http, created["run_id"])
        assert info["state"] == "done" and info["progress"] == {"done": 6, "total": 6}
        summary = info["summary"]["AnswerRelevancyMetric"]
        assert (
            summary["count"] == 6 and summary["ci95_low"] <= summary["mean"] <= summary["ci95_high"]
        )
        assert info["cost"]["requests"] >= 6  # the judge's requests are counted
        items = _all_results(http, created["run_id"])
        _check_complete(items, 6)
        first = data(
            http.get(
                f"/evaluate/runs/{created['run_id']}/results", params={"offset": 2, "limit": 3}
            )
        )
        assert first["total"] == 12 and first["items"] == items[2:5]


def test_run_list_is_paged(service: ServiceProcess) -> None:
    with service.client() as http:
        for i in range(3):
            wait_run(
                http,
                data(http.post("/evaluate/runs", json=_slow_run(f"list{i}", rows=1)), 202)[
                    "run_id"
                ],
            )
        page = data(http.get("/evaluate/runs", params={"limit": 2}))
        rest = data(http.get("/evaluate/runs", params={"offset": 2, "limit": 2}))
        done = data(http.get("/evaluate/runs", params={"state": "done", "limit": 1000}))
    assert len(page["items"]) == 2 and page["total"] >= 3
    assert not {r["run_id"] for r in page["items"]} & {r["run_id"] for r in rest["items"]}
    assert all(r["state"] == "done" for r in done["items"])


def test_cancel_keeps_finished_rows_and_resume_finishes(service: ServiceProcess) -> None:
    with service.client() as http:
        run_id = data(http.post("/evaluate/runs", json=_slow_run("cancel")), 202)["run_id"]
        _wait_progress(http, run_id, 2)
        cancelled = data(http.post(f"/evaluate/runs/{run_id}/cancel"))
        assert cancelled["state"] == "cancelled" and cancelled["resumable"] is True
        time.sleep(1.0)
        still = data(http.get(f"/evaluate/runs/{run_id}"))
        assert still["state"] == "cancelled" and still["progress"]["done"] < ROWS
        kept = _all_results(http, run_id)
        assert len(kept) == 2 * still["progress"]["done"]
        message = failure(http.post(f"/evaluate/runs/{run_id}/cancel"), 409)
        assert "cancelled" in message
        data(http.post(f"/evaluate/runs/{run_id}/resume"), 202)
        info = wait_run(http, run_id)
        assert info["state"] == "done" and info["resumable"] is False
        items = _all_results(http, run_id)
        _check_complete(items, ROWS)
        assert [i for i in items if i["row_index"] in {k["row_index"] for k in kept}] == kept
        failure(http.post(f"/evaluate/runs/{run_id}/resume"), 409)  # nothing left to do
        failure(http.get("/evaluate/runs/no-such-run"), 404)


def test_kill_9_then_resume_loses_no_row_and_redoes_none(
    tmp_path: Path, judge: ScriptedJudgeServer
) -> None:
    home = tmp_path / "home"
    write_models(home, judge.url)
    server = ServiceProcess(home).start()
    try:
        body = {**_slow_run("crash"), "evaluate_code": "crash-run"}
        run_id = _run_under_way(server, body, 6)
        assert run_id == "crash-run"  # DB-GPT's evaluate_code names the run
        server.kill()
        server.start()  # same home, same port
        with server.client() as http:
            after = data(http.get(f"/evaluate/runs/{run_id}"))
            assert after["state"] == "failed" and after["resumable"] is True
            assert "interrupted" in after["error"]
            assert 6 <= after["progress"]["done"] < ROWS
            kept = _all_results(http, run_id)
            assert len(kept) == 2 * after["progress"]["done"]
            judge.reset()
            data(http.post(f"/evaluate/runs/{run_id}/resume"), 202)
            info = wait_run(http, run_id)
            assert info["state"] == "done" and info["progress"] == {"done": ROWS, "total": ROWS}
            items = _all_results(http, run_id)
        _check_complete(items, ROWS)
        done_before = {k["row_index"] for k in kept}
        assert [i for i in items if i["row_index"] in done_before] == kept  # untouched
        left = ROWS - len(done_before)
        # each row left needs at most one app answer and one judgement; finished rows none
        assert judge.snapshot().get("chat_requests", 0) <= 2 * left
    finally:
        server.stop()


def test_client_creates_waits_and_iterates(service: ServiceProcess) -> None:
    seen: list[int] = []
    with Client(api_base=service.api, api_key=KEY) as client:
        created = client.runs.create(_slow_run("client", rows=4))
        info = client.runs.wait(created.run_id, lambda i: seen.append(i.progress["done"]), poll=0.1)
        results = list(client.runs.results(created.run_id, page_size=3))
        listed = client.runs.list(limit=1000)
    assert info.state == "done" and seen[-1] == 4 and seen == sorted(seen)
    assert len(results) == 8 and {r.row_index for r in results} == {0, 1, 2, 3}
    assert created.run_id in {r.run_id for r in listed.items}


def test_a_stopped_server_leaves_its_runs_resumable(
    tmp_path: Path, judge: ScriptedJudgeServer
) -> None:
    home = tmp_path / "home"
    write_models(home, judge.url)
    server = ServiceProcess(home).start()
    try:
        run_id = _run_under_way(server, _slow_run("stop"), 2)
        server.stop()  # SIGTERM: uvicorn shuts down gracefully
        server.start()
        with server.client() as http:
            after = data(http.get(f"/evaluate/runs/{run_id}"))
            assert (after["state"], after["resumable"]) == ("failed", True)
            assert "interrupted" in after["error"]
            data(http.post(f"/evaluate/runs/{run_id}/resume"), 202)
            assert wait_run(http, run_id)["state"] == "done"
            _check_complete(_all_results(http, run_id), ROWS)
    finally:
        server.stop()


def test_a_run_whose_judge_is_unreachable_fails_naming_it_then_resumes(
    tmp_path: Path, judge: ScriptedJudgeServer
) -> None:
    home = tmp_path / "home"
    write_models(home, judge.url)
    config = home / "ragmeter.toml"
    working = config.read_text(encoding="utf-8")
    down = '\n[models.judge]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "x"\ntimeout = 1\n'
    config.write_text(working + down, encoding="utf-8")
    server = ServiceProcess(home).start()
    try:
        _setup(server)
        body = {**_slow_run("down", rows=3), "context": {"model": "judge"}}
        with server.client() as http:
            run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
            first = wait_run(http, run_id)
            assert (first["state"], first["error_kind"], first["resumable"]) == (
                "failed", "upstream", True,
            )  # fmt: skip
            assert "judge 'judge' at http://127.0.0.1:9/v1 is unreachable" in first["error"]
            assert not _all_results(http, run_id)  # rows not judged are left for the resume
        server.stop()
        fixed = f'\n[models.judge]\nbase_url = "{judge.url}"\nmodel = "scripted"\n'
        config.write_text(working + fixed, encoding="utf-8")  # the judge is back
        server.start()
        with Client(api_base=server.api, api_key=KEY) as client:
            client.runs.resume(run_id)
            info = client.runs.wait(run_id, poll=0.1)
            items = list(client.runs.results(run_id))
        assert info.state == "done" and info.progress == {"done": 3, "total": 3}
        assert len(items) == 6 and all(i.score is not None for i in items)
    finally:
        server.stop()


def test_the_cli_resumes_a_run_whose_server_was_killed(
    tmp_path: Path, judge: ScriptedJudgeServer
) -> None:
    home = tmp_path / "home"
    write_models(home, judge.url)
    server = ServiceProcess(home).start()
    try:
        run_id = _run_under_way(server, _slow_run("cli"), 4)
    finally:
        server.kill()  # no server comes back: the command line takes over
    listed = run("runs", "list", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    (shown,) = json.loads(listed.stdout)  # its process is gone: interrupted, never "running"
    assert shown["id"] == run_id and shown["state"] == "failed" and shown["resumable"]
    resumed = run("runs", "resume", run_id, home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{ROWS}/{ROWS} rows" in resumed.stdout and "AnswerRelevancyMetric" in resumed.stdout
    out = tmp_path / "results.jsonl"
    assert run("runs", "results", run_id, "--out", str(out), home=home).returncode == 0
    _check_complete(json_lines(out.read_text(encoding="utf-8")), ROWS)
    again = run("runs", "resume", run_id, home=home)
    assert again.returncode == 2 and "no rows left" in again.stderr
