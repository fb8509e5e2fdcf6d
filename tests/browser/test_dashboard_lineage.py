"""Run lineage, dataset versions and housekeeping in the dashboard, in real Chromium over a
real ``ragmeter serve``, with runs made as a user makes them: ``ragmeter eval FILE --name
--tag`` in a git working tree (clean, then with the file edited: dataset version 2 and a dirty
tree), and inline rows through the API. The Runs view shows names, tags, target labels and
dataset versions, filters by tag and archived, renames, tags, archives and deletes (a running
run's refusal shown); the Run view shows what made the run and edits its labels; Compare
shows what changed before the numbers; the Datasets views list versions with their runs."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ragmeter.testing import ScriptedJudgeServer
from tests.browser.helpers import api as _api
from tests.browser.helpers import page_errors as _errors
from tests.integration.helpers import run as cli
from tests.integration.helpers import write_models
from tests.integration.service import ServiceProcess, data, wait_run

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]


def _rows(n: int, refs: list[str]) -> list[dict[str, Any]]:
    return [
        {"id": f"r{i}", "query": f"how is part {i} set up?", "retrieved_ids": ["a", "b", "c"],
         "reference_ids": [refs[i % len(refs)]]}
        for i in range(n)
    ]  # fmt: skip


#: version 1 of qa.jsonl, then version 2: one row added, rows 2, 5 and 8 changed
V1 = _rows(9, ["a", "b", "z"])
V2 = _rows(10, ["a", "b", "c"])
JUDGED = [
    {"query": f"What does step {i} do?", "response": f"Step {i} installs it.",
     "contexts": [f"Step {i} installs the package."]}
    for i in range(6)
]  # fmt: skip


@dataclass
class World:
    server: ServiceProcess
    baseline: str  # qa@1, clean tree, tags exp1 v1, a note
    candidate: str  # qa@2, dirty tree, tag exp1
    again: str  # qa@2 again, the same lineage as candidate
    inline: str  # inline rows through the API, no name
    commit: str


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _eval(home: Path, folder: Path, *args: str) -> str:
    done = cli("eval", "qa.jsonl", "-m", "hit_rate,mrr", *args, home=home, cwd=folder)
    assert done.returncode == 0, done.stderr
    found = re.findall(r"[0-9a-f]{32}", done.stdout + done.stderr)
    assert found, done.stdout
    return found[0]


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer(latency_ms=20) as server:
        yield server


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str, judge: ScriptedJudgeServer
) -> Iterator[World]:
    home = tmp_path_factory.mktemp("lineage-home")
    write_models(home, judge.url)
    folder = tmp_path_factory.mktemp("project")
    _git(folder, "init", "-q")
    _git(folder, "config", "user.email", "dev@example.com")
    _git(folder, "config", "user.name", "dev")
    _write(folder / "qa.jsonl", V1)
    _git(folder, "add", "qa.jsonl")
    _git(folder, "commit", "-qm", "rows")
    commit = _git(folder, "rev-parse", "HEAD")
    with ServiceProcess(home, keys=None) as server, server.client(None) as http:
        baseline = _eval(home, folder, "--name", "baseline", "--tag", "exp1", "--tag", "v1",
                         "--note", "first cut of the retriever")  # fmt: skip
        _write(folder / "qa.jsonl", V2)  # the tracked file edited: version 2, a dirty tree
        candidate = _eval(home, folder, "--name", "candidate", "--tag", "exp1")
        again = _eval(home, folder, "--name", "candidate again", "--tag", "exp1")
        request = {"scene_key": "dataset", "datasets": V1[:4], "evaluate_metrics": ["hit_rate"]}
        inline = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
        assert wait_run(http, inline)["state"] == "done"
        yield World(server, baseline, candidate, again, inline, commit)


def _open(page: Page, world: World, route: str, lang: str = "en") -> None:
    page.goto(f"{world.server.url}/{route}")
    page.evaluate(f"localStorage.setItem('ragmeter.lang', '{lang}')")
    page.reload()  # the language is read when the page loads


def _actions_in_view(page: Page) -> None:
    """Each run's actions (its Compare box, Manage) are inside the table's visible frame, not
    past its right edge where only a sideways scroll reaches them."""
    frame = page.locator(".table-wrap").bounding_box()
    assert frame is not None
    for box in page.locator("input.pick-run").all():
        found = box.bounding_box()
        assert found is not None and found["x"] + found["width"] <= frame["x"] + frame["width"], (
            found,
            frame,
        )


def test_the_runs_view_shows_names_tags_labels_and_dataset_versions(
    page: Page, world: World, shoot: Shoot
) -> None:
    errors = _errors(page)
    _open(page, world, "#/runs")
    rows = page.locator("table.runs tbody tr")
    expect(rows).to_have_count(4)
    expect(page.locator("thead th")).to_have_text(
        ["Run", "Tags", "Target", "Dataset", "Metrics (mean, 95% CI)", "State", "Judge cost",
         "Created", "Actions"]
    )  # fmt: skip
    base = page.locator(f'tr[data-run="{world.baseline}"]')
    expect(base.locator("th a.name")).to_have_text("baseline")
    expect(base.locator("th .run-id")).to_have_text(world.baseline[:12])
    expect(base.locator("td.tags .chip")).to_have_text(["exp1", "v1"])
    expect(base.locator("td.label")).to_have_text("given answers")
    expect(base.locator("td.dataset")).to_have_text("qa@1")
    expect(page.locator(f'tr[data-run="{world.candidate}"] td.dataset')).to_have_text("qa@2")
    # a run without a name: its target label, muted; its rows were sent inline
    inline = page.locator(f'tr[data-run="{world.inline}"]')
    expect(inline.locator("th a.unnamed")).to_have_text("given answers")
    expect(inline.locator("td.dataset")).to_have_text("inline rows")
    expect(page.locator("main")).not_to_contain_text("dataset:")  # no "scene: value" left
    _actions_in_view(page)
    shoot(page, "dashboard-lineage-runs-en")
    # a chip filters by its tag, kept in the URL across a reload
    base.locator('button.chip[data-tag="v1"]').click()
    expect(page).to_have_url(re.compile(r"#/runs\?tag=v1$"))
    expect(rows).to_have_count(1)
    expect(page.get_by_label("Tags", exact=True)).to_have_value("v1")
    page.reload()
    expect(rows).to_have_count(1)
    expect(page.get_by_label("Tags", exact=True)).to_have_value("v1")
    page.get_by_label("Tags", exact=True).fill("exp1")
    expect(page).to_have_url(re.compile(r"#/runs\?tag=exp1$"))
    expect(rows).to_have_count(3)
    page.get_by_label("Search").fill("again")
    expect(rows).to_have_count(1)
    expect(page).to_have_url(re.compile(r"tag=exp1&q=again$"))
    page.get_by_role("button", name="Clear filters").click()
    expect(rows).to_have_count(4)
    # in Chinese
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("thead th").nth(1)).to_have_text("标签")
    expect(inline.locator("td.dataset")).to_have_text("内联数据")
    expect(page.get_by_label("已归档")).to_have_value("no")
    _actions_in_view(page)
    shoot(page, "dashboard-lineage-runs-zh")
    assert errors == []


def test_rename_tag_archive_and_delete_from_the_runs_view(
    page: Page, world: World, judge: ScriptedJudgeServer, shoot: Shoot
) -> None:
    errors = _errors(page)
    with world.server.client(None) as http:
        request = {"scene_key": "dataset", "datasets": V1[:3], "evaluate_metrics": ["mrr"]}
        scratch = data(http.post("/evaluate/runs", json={**request, "name": "scratch"}), 202)
        assert wait_run(http, scratch["run_id"])["state"] == "done"
    run_id = scratch["run_id"]
    _open(page, world, "#/runs?q=scratch")
    row = page.locator(f'tr[data-run="{run_id}"]')
    row.get_by_text("Manage").click()
    row.get_by_role("button", name="Rename").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("heading")).to_have_text("Rename run scratch")
    dialog.get_by_label("Name").fill("scratch renamed")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_have_count(0)
    expect(row.locator("th a.name")).to_have_text("scratch renamed")
    row.get_by_text("Manage").click()
    row.get_by_role("button", name="Tags").click()
    page.get_by_role("dialog").get_by_label("Tags").fill("tmp  smoke,tmp")
    shoot(page, "dashboard-lineage-tags-dialog-en")
    page.get_by_role("dialog").get_by_role("button", name="Save").click()
    expect(row.locator("td.tags .chip")).to_have_text(["smoke", "tmp"])
    # a tag the server refuses: its message in the dialog, which stays open
    row.get_by_text("Manage").click()
    row.get_by_role("button", name="Tags").click()
    page.get_by_role("dialog").get_by_label("Tags").fill("no#good")
    page.get_by_role("dialog").get_by_role("button", name="Save").click()
    expect(page.get_by_role("dialog").get_by_role("alert")).to_contain_text("invalid tag")
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    info = _api(world.server, f"/evaluate/runs/{run_id}")
    assert (info["name"], info["tags"]) == ("scratch renamed", ["smoke", "tmp"])
    # archived: out of the list, back with "shown too", with a badge
    row.get_by_text("Manage").click()
    row.get_by_role("button", name="Archive").click()
    expect(row).to_have_count(0)
    page.get_by_label("Archived").select_option("all")
    expect(page).to_have_url(re.compile(r"archived=all"))
    expect(row.locator(".badge.archived")).to_have_text("archived")
    shoot(page, "dashboard-lineage-archived-en")
    row.get_by_text("Manage").click()
    row.get_by_role("button", name="Unarchive").click()
    expect(row.locator(".badge.archived")).to_have_count(0)
    assert _api(world.server, f"/evaluate/runs/{run_id}")["archived"] is False
    # deleted once confirmed
    row.get_by_text("Manage").click()
    row.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("dialog")).to_contain_text("This cannot be undone.")
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(row).to_have_count(0)
    with world.server.client(None) as http:
        assert http.get(f"/evaluate/runs/{run_id}").status_code == 404
    # a running run cannot be deleted: the server's 409 says why, in the dialog
    judge.latency_s = 1.0
    try:
        with world.server.client(None) as http:
            body = {"scene_key": "dataset", "datasets": JUDGED, "name": "slow judged",
                    "evaluate_metrics": ["faithfulness"], "context": {"model": "scripted"},
                    "parallel_num": 1}  # fmt: skip
            slow = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
        _open(page, world, "#/runs?q=slow")
        row = page.locator(f'tr[data-run="{slow}"]')
        expect(row.locator(".badge[class*=state-]")).to_have_text(re.compile("pending|running"))
        row.get_by_text("Manage").click()
        row.get_by_role("button", name="Delete").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.get_by_role("dialog").get_by_role("alert")).to_contain_text("cancel")
        shoot(page, "dashboard-lineage-delete-refused-en")
        page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
        with world.server.client(None) as http:
            http.post(f"/evaluate/runs/{slow}/cancel")
            wait_run(http, slow)
            assert http.delete(f"/evaluate/runs/{slow}").status_code == 200
    finally:
        judge.latency_s = 0.02
    assert errors == []


def test_the_run_view_shows_what_made_it_and_edits_its_labels(
    page: Page, world: World, shoot: Shoot
) -> None:
    errors = _errors(page)
    _open(page, world, f"#/runs/{world.baseline}")
    expect(page.locator("h1")).to_have_text("baseline")
    lineage = page.locator("#run-lineage")
    dataset = _api(world.server, f"/evaluate/runs/{world.baseline}")["dataset"]
    facts = {
        "dataset": ["qa@1", f"#{dataset['hash']}", "qa.jsonl", "9 rows"],
        "target": ["given answers"],
        "metrics": ["hit_rate, mrr"],
        "options": ["plan fused"],
        "judge": ["none"],
        "ragmeter": [re.compile(r"\d+\.\d+")],
        "code": [world.commit[:12], "no uncommitted changes"],
    }
    for key, texts in facts.items():
        for text in texts:
            expect(lineage.locator(f'[data-fact="{key}"] dd')).to_contain_text(text)
    labels = page.locator("#run-labels")
    expect(labels.locator('[data-fact="tags"] .chip')).to_have_text(["exp1", "v1"])
    expect(labels.locator('[data-fact="note"]')).to_contain_text("first cut of the retriever")
    shoot(page, "dashboard-lineage-run-en")
    # the candidate ran from an edited tree: flagged
    _open(page, world, f"#/runs/{world.candidate}")
    expect(page.locator('#run-lineage [data-fact="code"]')).to_contain_text("uncommitted changes")
    expect(page.locator('#run-lineage [data-fact="code"] .badge.dirty')).to_be_visible()
    expect(page.locator('#run-lineage [data-fact="dataset"]')).to_contain_text("qa@2")
    # edit name, tags and note of the inline run (unnamed: titled by its label)
    _open(page, world, f"#/runs/{world.inline}")
    expect(page.locator("h1")).to_have_text("given answers")
    expect(page.locator('#run-lineage [data-fact="dataset"]')).to_contain_text("inline rows")
    page.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("inline check")
    dialog.get_by_label("Tags").fill("adhoc")
    dialog.get_by_label("Note").fill("four rows sent with the request")
    dialog.get_by_role("button", name="Save").click()
    expect(page.locator("h1")).to_have_text("inline check")
    expect(page.locator('#run-labels [data-fact="tags"] .chip')).to_have_text(["adhoc"])
    info = _api(world.server, f"/evaluate/runs/{world.inline}")
    assert (info["name"], info["tags"], info["note"]) == (
        "inline check", ["adhoc"], "four rows sent with the request")  # fmt: skip
    # a tag links to the runs that have it
    page.locator('#run-labels a.chip[data-tag="adhoc"]').click()
    expect(page).to_have_url(re.compile(r"#/runs\?tag=adhoc$"))
    expect(page.locator("table.runs tbody tr")).to_have_count(1)
    _open(page, world, f"#/runs/{world.baseline}", "zh")
    expect(page.locator("#lineage-title")).to_have_text("这次运行的来历")
    expect(page.locator('#run-lineage [data-fact="code"]')).to_contain_text("无未提交的改动")
    shoot(page, "dashboard-lineage-run-zh")
    assert errors == []


def test_a_run_stored_before_lineage_says_not_recorded(page: Page, world: World) -> None:
    """A run whose lineage is empty (stored before lineage was kept): the panel says so."""
    from sqlalchemy import create_engine, text

    with world.server.client(None) as http:
        request = {"scene_key": "dataset", "datasets": V1[:2], "evaluate_metrics": ["mrr"]}
        old = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
        wait_run(http, old)
    engine = create_engine(world.server.store_url)
    with engine.begin() as db:  # as migration 0009 left it
        changed = db.execute(text("UPDATE runs SET lineage = '{}' WHERE id = :id"), {"id": old})
        assert changed.rowcount == 1
    engine.dispose()
    try:
        _open(page, world, f"#/runs/{old}")
        expect(page.locator("#lineage-none")).to_contain_text("Not recorded")
    finally:
        with world.server.client(None) as http:
            http.delete(f"/evaluate/runs/{old}")


def test_compare_shows_what_changed_before_the_numbers(
    page: Page, world: World, shoot: Shoot
) -> None:
    errors = _errors(page)
    _open(page, world, f"#/compare/{world.baseline}/{world.candidate}")
    changes = page.locator("#compare-changes")
    expect(changes.locator("h2")).to_have_text("What changed")
    found = _api(world.server, f"/evaluate/runs/{world.baseline}/changes/{world.candidate}")
    keys = [c["key"] for c in found["changes"]]
    assert {"dataset.version", "dataset.hash", "code.dirty"} <= set(keys)
    expect(changes.locator("tbody tr")).to_have_count(len(keys))
    version = changes.locator('tr[data-key="dataset.version"]')
    expect(version.locator("td")).to_have_text(["1", "2"])
    expect(changes.locator('tr[data-key="code.dirty"] td')).to_have_text(["no", "yes"])
    rows = found["rows"]
    assert (rows["added"], rows["removed"], rows["changed"]) == (1, 0, 3)
    expect(page.locator("#rows-diff")).to_have_text(
        "Dataset rows: 1 added, 0 removed, 3 changed, 6 unchanged, paired by id."
    )
    # before the numbers
    order = page.evaluate(
        "() => [...document.querySelectorAll('#compare-changes, table.compare-metrics')]"
        ".map(e => e.id || 'metrics')"
    )
    assert order == ["compare-changes", "metrics"]
    # the pickers say which run is which: name, target, dataset version
    picked = page.get_by_label("Baseline", exact=True).locator("option:checked")
    expect(picked).to_have_text(f"baseline · qa@1 · given answers ({world.baseline[:8]})")
    options = page.get_by_label("Candidate", exact=True).locator("option")
    expect(options.filter(has_text="inline rows")).to_have_count(1)
    page.wait_for_selector("table.pairs")
    shoot(page, "dashboard-lineage-compare-en")
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("#changes-title")).to_have_text("两次运行有何不同")
    expect(page.locator("#rows-diff")).to_contain_text("新增 1 行，删除 0 行，修改 3 行")
    page.wait_for_selector("table.pairs")
    shoot(page, "dashboard-lineage-compare-zh")
    # the same lineage: said in one line, no table
    _open(page, world, f"#/compare/{world.candidate}/{world.again}")
    expect(page.locator("#same-lineage")).to_have_text(re.compile("^Same lineage"))
    expect(page.locator("#compare-changes table")).to_have_count(0)
    page.wait_for_selector("table.pairs")
    shoot(page, "dashboard-lineage-compare-same-en")
    assert errors == []


def test_the_datasets_views_list_versions_and_their_runs(
    page: Page, world: World, shoot: Shoot
) -> None:
    errors = _errors(page)
    _open(page, world, "#/datasets")
    row = page.locator('tr[data-dataset="qa"]')
    expect(row.locator('[data-col="version"]')).to_have_text("v2")
    expect(row.locator('[data-col="versions"]')).to_have_text("2")
    expect(row.locator('[data-col="runs"]')).to_have_text("3")
    expect(row.locator('[data-col="rows"]')).to_have_text("10")
    shoot(page, "dashboard-lineage-datasets-en")
    row.get_by_role("link", name="qa", exact=True).click()
    expect(page).to_have_url(re.compile(r"#/datasets/qa$"))
    expect(page.locator("#shown-version")).to_have_text("v2, the newest of 2")
    versions = page.locator("table.versions tbody tr")
    expect(versions).to_have_count(2)
    listed = _api(world.server, "/datasets/qa/versions")
    for v in listed:
        shown = page.locator(f'table.versions tr[data-version="{v["version"]}"]')
        expect(shown).to_contain_text(v["content_hash"][:12])
        expect(shown).to_contain_text(str(v["row_count"]))
    expect(page.get_by_role("link", name="2 runs of qa@2")).to_be_visible()
    shoot(page, "dashboard-lineage-dataset-en")
    # a version's runs: the Runs view filtered by that dataset version
    page.get_by_role("link", name="1 runs of qa@1").click()
    expect(page).to_have_url(re.compile(r"#/runs\?dataset=\d+$"))
    expect(page.locator("table.runs tbody tr")).to_have_count(1)
    expect(page.locator(f'tr[data-run="{world.baseline}"]')).to_be_visible()
    expect(page.get_by_label("Dataset", exact=True).locator("option:checked")).to_have_text("qa@1")
    # an older version's rows
    _open(page, world, "#/datasets/qa@1", "zh")
    expect(page.locator("#shown-version")).to_contain_text("不是最新版本")
    expect(page.locator("table.dataset-rows caption")).to_have_text("共 9 行")
    shoot(page, "dashboard-lineage-dataset-zh")
    assert errors == []


def test_deleting_a_version_and_then_the_dataset(page: Page, world: World, shoot: Shoot) -> None:
    errors = _errors(page)
    with world.server.client(None) as http:
        for rows in (V1[:3], V1[:5]):
            body = "".join(json.dumps(r) + "\n" for r in rows).encode()
            files = {"file": ("scratch.jsonl", body, "application/x-ndjson")}
            data(http.post("/datasets", params={"name": "scratch"}, files=files), 201)
    # the same rows uploaded again: the version that holds them, nothing new stored
    _open(page, world, "#/datasets")
    again = "".join(json.dumps(r) + "\n" for r in V1[:5]).encode()
    page.get_by_label("File").set_input_files(
        files=[{"name": "scratch.jsonl", "mimeType": "application/x-ndjson", "buffer": again}]
    )
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#ds-outcome [role=status]")).to_contain_text(
        "These 5 rows are already stored as scratch@2: nothing new was stored."
    )
    expect(page.locator('tr[data-dataset="scratch"] td[data-col="versions"]')).to_have_text("2")
    _open(page, world, "#/datasets/scratch")
    expect(page.locator("table.versions tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Delete version scratch@1").click()
    expect(page.get_by_role("dialog").get_by_role("heading")).to_have_text(
        "Delete version scratch@1?"
    )
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator("table.versions tbody tr")).to_have_count(1)
    assert [v["version"] for v in _api(world.server, "/datasets/scratch/versions")] == [2]
    page.get_by_role("button", name="Delete dataset").click()
    shoot(page, "dashboard-lineage-dataset-delete-en")
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page).to_have_url(re.compile(r"#/datasets$"))
    expect(page.locator('tr[data-dataset="scratch"]')).to_have_count(0)
    with world.server.client(None) as http:
        assert http.get("/datasets/scratch").status_code == 404
    assert errors == []


def test_a_run_judged_by_the_scripted_judge_says_so(page: Page, world: World, shoot: Shoot) -> None:
    errors = _errors(page)
    with world.server.client(None) as http:
        body = {"scene_key": "dataset", "datasets": JUDGED, "name": "dry run",
                "evaluate_metrics": ["faithfulness"], "context": {"model": "scripted"}}  # fmt: skip
        run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
        assert wait_run(http, run_id)["scripted_judge"] is True
    for lang, badge in (("en", "scripted judge"), ("zh", "脚本评审")):
        _open(page, world, f"#/runs/{run_id}", lang)
        expect(page.locator(".scripted-note .badge.scripted")).to_have_text(badge)
        shoot(page, f"dashboard-scripted-run-{lang}")
        _open(page, world, "#/runs?q=dry", lang)
        row = page.locator(f'tr[data-run="{run_id}"]')
        expect(row.locator(".badge.scripted")).to_have_text(badge)
    # a run with no judge carries no such mark
    _open(page, world, f"#/runs/{world.baseline}")
    expect(page.locator("h1")).to_have_text("baseline")
    expect(page.locator(".badge.scripted")).to_have_count(0)
    assert errors == []
