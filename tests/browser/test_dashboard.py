"""The dashboard's Runs view in real Chromium over a real ``ragmeter serve`` and its store:
runs listed with their means and 95% CIs as the API computes them, filters kept in the URL
across a reload, the Chinese switch, cancel and resume on a running run, the empty state, and
the key form when the server has keys. Each state is saved as a screenshot to look at."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import RAGMETER, write_models
from tests.integration.service import KEY, ServiceProcess, data, free_port, wait_run

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]

RETRIEVAL = [
    {"query": f"q{i}", "retrieved_ids": ["a", "b", "c"], "reference_ids": [["a", "b", "z"][i % 3]]}
    for i in range(9)
]
#: judged rows: each asks the scripted judge, which answers slowly while a test wants it to
JUDGED = [
    {
        "query": f"What does step {i} of the guide do?",
        "response": f"Step {i} installs the package and checks the version.",
        "contexts": [f"Step {i} installs the package.", "Then it checks the version."],
    }
    for i in range(8)
]


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer(latency_ms=20) as server:
        yield server


def _upload(http: Any, name: str, rows: list[dict[str, Any]]) -> None:
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    files = {"file": (f"{name}.jsonl", body, "application/x-ndjson")}
    data(http.post("/datasets", params={"name": name}, files=files), 201)


def _run(http: Any, **body: Any) -> str:
    run_id: str = data(http.post("/evaluate/runs", json={"scene_key": "dataset", **body}), 202)[
        "run_id"
    ]
    return run_id


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str, judge: ScriptedJudgeServer
) -> Iterator[ServiceProcess]:
    """A keyless server over a store with three finished runs: two over the stored dataset
    'golden-qa', one over inline rows."""
    home = tmp_path_factory.mktemp("dashboard-home")
    write_models(home, judge.url)
    with ServiceProcess(home, keys=None) as server, server.client(None) as http:
        _upload(http, "golden-qa", RETRIEVAL)
        _upload(http, "judged", JUDGED)
        ids = [
            _run(http, datasets_name="golden-qa", evaluate_metrics=["hit_rate", "mrr"]),
            _run(http, datasets_name="golden-qa", evaluate_metrics=["mrr"]),
            _run(http, datasets=RETRIEVAL[:4], evaluate_metrics=["hit_rate"]),
        ]
        for run_id in ids:
            assert wait_run(http, run_id)["state"] == "done"
        yield server


def _listed(server: ServiceProcess) -> dict[str, dict[str, Any]]:
    with server.client(None) as http:
        page = data(http.get("/evaluate/runs", params={"summary": "true", "limit": 100}))
    return {run["run_id"]: run for run in page["items"]}


def _open(page: Page, server: ServiceProcess, hash_route: str = "#/runs") -> None:
    page.goto(f"{server.url}/{hash_route}")
    page.wait_for_selector("table.runs, .empty, .key-form")


def test_the_runs_view_lists_every_run_with_means_and_cis(
    page: Page, service: ServiceProcess, shoot: Shoot
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    _open(page, service)
    runs = _listed(service)
    rows = page.locator("table.runs tbody tr")
    expect(rows).to_have_count(len(runs))
    for run_id, run in runs.items():
        row = page.locator(f'tr[data-run="{run_id}"]')
        expect(row.locator("th .run-id")).to_have_text(run_id[:12])
        expect(row.locator("td.label")).to_have_text(run["label"])
        expect(row.locator(".badge[class*=state-]")).to_have_text("done")
        for name in run["metrics"]:
            s = run["summary"][name]
            shown = f"{s['mean']:.3f} [{s['ci95_low']:.3f}, {s['ci95_high']:.3f}]"
            if s.get("ci_note"):  # few rows or all equal: said in words, not numbers
                shown = f"{s['mean']:.3f} interval not informative (n={s['count']})"
            expect(row.locator(f'li[data-metric="{name}"]')).to_contain_text(shown)
        total = run["progress"]["total"]
        expect(row).to_contain_text(f"{total} of {total} rows")
    expect(page.locator("tr", has_text="golden-qa")).to_have_count(2)
    expect(page.locator("td.dataset", has_text="inline rows")).to_have_count(1)
    expect(page.locator("caption")).to_have_text("3 runs")
    shoot(page, "dashboard-runs-en")
    assert errors == []


def test_filters_change_the_url_and_survive_a_reload(
    page: Page, service: ServiceProcess, shoot: Shoot
) -> None:
    _open(page, service)
    page.get_by_label("Search").fill("golden")
    expect(page).to_have_url(re.compile(r"#/runs\?q=golden$"))
    expect(page.locator("table.runs tbody tr")).to_have_count(2)
    page.get_by_label("State").select_option("done")
    expect(page).to_have_url(re.compile(r"q=golden&state=done"))
    page.reload()
    page.wait_for_selector("table.runs")
    expect(page.get_by_label("Search")).to_have_value("golden")
    expect(page.get_by_label("State")).to_have_value("done")
    expect(page.locator("table.runs tbody tr")).to_have_count(2)
    shoot(page, "dashboard-runs-filtered")
    # the dataset filter lists stored datasets by name; the inline run matches none
    page.get_by_label("Dataset").select_option(label="golden-qa@1")
    expect(page).to_have_url(re.compile(r"dataset=\d+"))
    expect(page.locator("table.runs tbody tr")).to_have_count(2)
    page.get_by_label("State").select_option("failed")
    expect(page.get_by_text("No run matches these filters.")).to_be_visible()
    shoot(page, "dashboard-runs-no-match")
    page.get_by_role("button", name="Clear filters").click()
    expect(page).to_have_url(re.compile(r"#/runs$"))
    expect(page.locator("table.runs tbody tr")).to_have_count(3)


def test_the_chinese_switch_changes_the_text_and_is_remembered(
    page: Page, service: ServiceProcess, shoot: Shoot
) -> None:
    _open(page, service)
    expect(page.locator("h1")).to_have_text("Runs")
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("h1")).to_have_text("评测运行")
    expect(page.locator("thead")).to_contain_text("指标（均值，95% 置信区间）")
    expect(page.locator(".badge[class*=state-]").first).to_have_text("已完成")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    shoot(page, "dashboard-runs-zh")
    page.reload()
    page.wait_for_selector("table.runs")
    expect(page.get_by_label("语言")).to_have_value("zh")
    expect(page.locator("caption")).to_have_text("共 3 次运行")


def test_a_chinese_browser_gets_chinese_by_default(
    browser: Browser, service: ServiceProcess
) -> None:
    context = browser.new_context(locale="zh-CN")
    try:
        page = context.new_page()
        _open(page, service)
        expect(page.locator("h1")).to_have_text("评测运行")
    finally:
        context.close()


def test_cancel_and_resume_a_running_run(
    page: Page, service: ServiceProcess, judge: ScriptedJudgeServer, shoot: Shoot
) -> None:
    judge.latency_s = 1.5  # slow enough to be seen running and cancelled midway
    with service.client(None) as http:
        run_id = _run(
            http,
            datasets_name="judged",
            evaluate_metrics=["faithfulness"],
            context={"model": "scripted"},
            parallel_num=1,
        )
    try:
        _open(page, service, "#/runs?q=" + run_id[:12])
        row = page.locator(f'tr[data-run="{run_id}"]')
        expect(row.locator(".badge[class*=state-]")).to_have_text("running", timeout=20_000)
        shoot(page, "dashboard-run-running")
        row.get_by_role("button", name=f"Cancel run {run_id[:12]}").click()
        expect(row.locator(".badge[class*=state-]")).to_have_text("cancelled", timeout=30_000)
        with service.client(None) as http:
            stopped = data(http.get(f"/evaluate/runs/{run_id}"))
        assert stopped["state"] == "cancelled" and stopped["resumable"]
        assert stopped["progress"]["done"] < len(JUDGED)
        shoot(page, "dashboard-run-cancelled")
    finally:
        judge.latency_s = 0.02
    row.get_by_role("button", name=f"Resume run {run_id[:12]}").click()
    # the view polls while the run is live, and shows it done without a reload
    expect(row.locator(".badge[class*=state-]")).to_have_text("done", timeout=60_000)
    expect(row).to_contain_text(f"{len(JUDGED)} of {len(JUDGED)} rows")
    expect(row.get_by_role("button")).to_have_count(0)
    shoot(page, "dashboard-run-resumed")


def test_a_view_that_cannot_start_replaces_the_one_before(
    page: Page, service: ServiceProcess, shoot: Shoot
) -> None:
    """Going from the runs list to a run that does not exist shows the error alone: the list
    is not left on screen under the new address."""
    _open(page, service)
    expect(page.locator("table.runs tbody tr").first).to_be_visible()
    page.goto(f"{service.url}/#/runs/no-such-run")
    expect(page.locator("#main .error")).to_contain_text("no-such-run")
    expect(page.locator("table.runs")).to_have_count(0)
    shoot(page, "dashboard-run-missing")


def test_the_empty_state(page: Page, tmp_path: Path, shoot: Shoot) -> None:
    with ServiceProcess(tmp_path / "empty", keys=None) as server:
        _open(page, server)
        expect(page.get_by_text("No runs yet.")).to_be_visible()
        expect(page.locator("table")).to_have_count(0)
        shoot(page, "dashboard-runs-empty")


def test_the_key_form_when_the_server_has_keys(page: Page, tmp_path: Path, shoot: Shoot) -> None:
    with ServiceProcess(tmp_path / "keyed") as server:
        _open(page, server)
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        shoot(page, "dashboard-key-form")
        page.get_by_label("API key").fill("not-the-key")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("Wrong key")
        page.get_by_label("API key").fill(KEY)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_text("No runs yet.")).to_be_visible()
        assert KEY not in page.url and KEY not in page.content()
        assert "ragmeter_session" not in page.evaluate("document.cookie")  # HttpOnly
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        page.reload()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_serve_open_opens_the_dashboard_once_the_server_is_up(tmp_path: Path) -> None:
    """``ragmeter serve --open`` hands the dashboard's URL to the browser ($BROWSER here: a
    script that writes down what it was asked to open, and fetches it, as a browser would)."""
    opened = tmp_path / "opened.txt"
    fake = tmp_path / "browser.sh"
    script = f'curl -s -o /dev/null -w "%{{http_code}} $1" "$1" > "{opened}.part"'
    fake.write_text(f'#!/bin/sh\n{script}\nmv "{opened}.part" "{opened}"\n')
    fake.chmod(0o755)
    port = free_port()
    env = {**os.environ, "RAGMETER_HOME": str(tmp_path / "home"), "BROWSER": f"{fake} %s"}
    env.pop("RAGMETER_API_KEYS", None)
    args = [*RAGMETER, "serve", "--port", str(port), "--open", "--log-level", "warning"]
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not opened.exists():
            time.sleep(0.2)
        assert opened.read_text() == f"200 http://127.0.0.1:{port}/"
    finally:
        process.terminate()
        process.wait(timeout=30)
