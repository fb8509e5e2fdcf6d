"""The review flow in real Chromium over a real ``ragmeter serve`` with users (a run judged by
the scripted judge): a reviewer signed in with their key opens their queue from the Review
view and labels 20 rows with the keyboard only (1/0, then j), the judge's score for the
metric hidden before each label and shown after it, progress reading 20 / 20; the Review view
then shows their progress and the judge's agreement with the labels. In English and in
Chinese; screenshots saved to be looked at."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import page_errors
from tests.integration.helpers import run, scripted_home
from tests.integration.judge_suites import judge_suites
from tests.integration.roles import as_user, users_server
from tests.integration.service import STORE_URL_ENV, ServiceProcess, data, wait_run

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]
RUNS = "/api/v2/serve/evaluate/runs"
ROWS = [
    {
        "query": f"What does step {i} of the installer do?",
        "response": f"Step {i} copies file {i}."
        + (" It also paints the house." if i % 3 == 0 else ""),
        "retrieved_contexts": [f"Step {i} of the installer copies file {i} to the target folder."],
    }
    for i in range(24)
]
Served = tuple[ServiceProcess, dict[str, str], str, dict[str, int]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("dashboard-review")
    with scripted_home(home):
        server, keys = users_server(home, extra=(("rev2", "reviewer"),))
        try:
            with server.client(keys["member"]) as http:
                body = "".join(json.dumps(row) + "\n" for row in ROWS).encode()
                files = {"file": ("steps.jsonl", body, "application/x-ndjson")}
                data(http.post("/datasets", files=files), 201)
                request = {"scene_key": "dataset", "datasets_name": "steps",
                           "evaluate_metrics": ["faithfulness", "AnswerRelevancyMetric"], "context": {"model": "scripted"}}  # fmt: skip
                run_id = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
                assert wait_run(http, run_id)["state"] == "done"
                queues = {}
                for name, seed in (("reviewer", 1), ("rev2", 2)):
                    made = {"metric": "faithfulness", "rule": "random", "count": 20,
                            "reviewers": [name], "k": 1, "seed": seed}  # fmt: skip
                    queues[name] = data(
                        http.post(f"/evaluate/runs/{run_id}/reviews", json=made), 201
                    )["id"]
            yield server, keys, run_id, queues
        finally:
            server.stop()


def _sign_in(page: Page, server: ServiceProcess, key: str) -> None:
    page.goto(f"{server.url}/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def _label_twenty(
    page: Page, served: Served, who: str, texts: dict[str, str], shoot: Shoot, lang: str
) -> None:
    server, keys, run_id, queues = served
    with as_user(server, keys[who]) as http:
        mine = data(http.get(f"{RUNS}/{run_id}/reviews/{queues[who]}"))
    order = [item["row_index"] for item in mine["items"]]
    assert len(order) == 20
    page.goto(f"{server.url}/#/runs/{run_id}")
    page.locator("#run-review").click()
    expect(page.locator("h1")).to_contain_text(texts["title"])
    agreement = page.locator("#review-agreement")
    expect(agreement.locator("h2")).to_be_visible()
    before = agreement.inner_text()
    page.locator(f'button.open-queue[data-queue="{queues[who]}"]').click()
    card = page.locator('.result-card[data-metric="faithfulness"]')
    progress = page.locator("#review-progress")
    for i, row in enumerate(order):
        expect(page).to_have_url(re.compile(rf"#/runs/{run_id}/rows/{row}\?queue={queues[who]}$"))
        expect(page.locator("h1")).to_have_text(texts["row"].format(n=row))
        # before this reviewer's label: the judge's score and reasoning are not on the page
        expect(card.locator(".masked-note")).to_have_text(texts["masked"])
        expect(card.locator(".big")).to_have_count(0)
        expect(progress).to_have_text(f"{i} / 20")
        if i == 0:
            shoot(page, f"dashboard-review-{lang}-before")
        page.keyboard.press("1" if i % 2 == 0 else "0")
        expect(progress).to_have_text(f"{i + 1} / 20")
        expect(card.locator(".masked-note")).to_have_count(0)
        expect(card.locator(".big")).to_have_text(re.compile(r"\d\.\d{3}"))  # shown after
        expect(page.locator("#label-status")).to_have_text(texts["labelled"].format(v=1 - i % 2))
        if i == 0:
            shoot(page, f"dashboard-review-{lang}-after")
        if i < len(order) - 1:
            page.keyboard.press("j")
    expect(progress).to_have_text("20 / 20")
    shoot(page, f"dashboard-review-{lang}-done")
    with as_user(server, keys[who]) as http:  # the labels are the reviewer's, on those rows
        labels = data(http.get(f"{RUNS}/{run_id}/reviews/{queues[who]}"))["items"]
    assert [(i["row_index"], i["value"]) for i in labels] == [
        (row, float(1 - n % 2)) for n, row in enumerate(order)]  # fmt: skip
    page.goto(f"{server.url}/#/runs/{run_id}/review")
    queue_row = page.locator(f'table.review-queues tr[data-queue="{queues[who]}"]')
    expect(queue_row.locator(f'li[data-reviewer="{who}"]')).to_contain_text("20 / 20")
    table = page.locator('table.agreement[data-metric="faithfulness"][data-language="all"]')
    expect(table.locator("caption")).to_contain_text(texts["caption"])
    assert agreement.inner_text() != before  # the agreement moved with the 20 labels
    expect(table).to_contain_text(texts["corrected"])
    expect(table.locator("tbody tr").first.locator("td").nth(4)).not_to_have_text("0")
    shoot(page, f"dashboard-review-{lang}-agreement")
    # the Run view gives the metric's mean corrected by the labels under the judge's own
    page.goto(f"{server.url}/#/runs/{run_id}")
    corrected = page.locator('.metric-card[data-metric="faithfulness"] .calibrated')
    expect(corrected).to_contain_text(re.compile(texts["run_corrected"]))
    shoot(page, f"dashboard-review-{lang}-run")


def test_a_reviewer_labels_twenty_rows_with_the_keyboard(
    page: Page, served: Served, shoot: Shoot
) -> None:
    errors = page_errors(page)
    server, keys, _run, _queues = served
    _sign_in(page, server, keys["reviewer"])
    texts = {
        "title": "Review of",
        "row": "Row {n}",
        "masked": "The judge's score and reasoning are hidden until you label this row.",
        "labelled": "Your label: {v}",
        "caption": "faithfulness: 20 labelled of 24 rows",
        "corrected": "corrected by labels",
        "run_corrected": r"Corrected by \d+ human labels: \d\.\d+",
    }
    _label_twenty(page, served, "reviewer", texts, shoot, "en")
    assert errors == []


def test_a_reviewer_labels_twenty_rows_in_chinese(page: Page, served: Served, shoot: Shoot) -> None:
    errors = page_errors(page)
    server, keys, _run, _queues = served
    _sign_in(page, server, keys["rev2"])
    page.select_option("#lang", "zh")
    texts = {
        "title": "的人工标注",
        "row": "第 {n} 行",
        "masked": "标注这一行之前，评审模型的分数和理由先不显示。",
        "labelled": "你的标注：{v}",
        "caption": "faithfulness：24 行中已标注",
        "corrected": "人工标注校正",
        "run_corrected": r"经 \d+ 条人工标注校正：\d\.\d+",
    }
    _label_twenty(page, served, "rev2", texts, shoot, "zh")
    assert errors == []


def test_a_viewer_sees_no_labelling_panel(page: Page, served: Served) -> None:
    server, keys, run_id, _queues = served
    _sign_in(page, server, keys["viewer"])
    page.goto(f"{server.url}/#/runs/{run_id}/rows/0?label=faithfulness")
    expect(page.locator('.result-card[data-metric="faithfulness"] .big')).to_be_visible()
    expect(page.locator("#label-panel")).to_have_count(0)
    page.goto(f"{server.url}/#/runs/{run_id}/review")
    expect(page.locator("table.review-queues")).to_be_visible()
    expect(page.locator("#q-metric")).to_have_count(0)  # no queue form for a viewer


def test_a_0_5_metric_takes_the_keys_0_to_5_and_a_0_1_metric_a_typed_number(
    page: Page, served: Served, shoot: Shoot
) -> None:
    errors = page_errors(page)
    server, keys, run_id, _queues = served
    _sign_in(page, server, keys["admin"])
    page.goto(f"{server.url}/#/runs/{run_id}/rows/3")
    page.locator("#label-metric").select_option("AnswerRelevancyMetric")
    page.get_by_role("button", name="Start labelling").click()
    card = page.locator('.result-card[data-metric="AnswerRelevancyMetric"]')
    expect(card.locator(".masked-note")).to_be_visible()
    expect(page.locator("#label-keys")).to_contain_text("0–5")
    page.keyboard.press("c")  # the comment, then the keys type into it
    expect(page.locator("#label-comment")).to_be_focused()
    page.keyboard.type("one claim unsupported")
    page.locator("#label-comment").blur()
    page.keyboard.press("4")
    expect(page.locator("#label-status")).to_have_text("Your label: 4")
    expect(card.locator(".big")).to_be_visible()
    shoot(page, "dashboard-review-en-grades")
    page.keyboard.press("j")  # the next row of the run, the same metric
    expect(page).to_have_url(re.compile(r"rows/4\?label=AnswerRelevancyMetric$"))
    expect(page.locator("h1")).to_have_text("Row 4")
    page.goto(f"{server.url}/#/runs/{run_id}/rows/5?label=faithfulness")
    expect(page.locator("h1")).to_have_text("Row 5")
    expect(page.locator("#label-title")).to_have_text("Your label: faithfulness")
    page.locator("#label-value").fill("0.7")
    page.locator("#label-value").press("Enter")
    expect(page.locator("#label-status")).to_have_text("Your label: 0.7")
    page.reload()  # a label kept is a label shown: the judge's result is not hidden again
    expect(page.locator("#label-status")).to_have_text("Your label: 0.7")
    expect(page.locator('.result-card[data-metric="faithfulness"] .big')).to_be_visible()
    with as_user(server, keys["admin"]) as http:
        three = data(http.get(f"{RUNS}/{run_id}/rows/3/labels"))
        five = data(http.get(f"{RUNS}/{run_id}/rows/5/labels"))
    assert [(lb["metric"], lb["value"], lb["comment"]) for lb in three] == [
        ("AnswerRelevancyMetric", 4.0, "one claim unsupported")]  # fmt: skip
    assert [(lb["metric"], lb["value"]) for lb in five] == [("faithfulness", 0.7)]
    page.get_by_role("button", name="Remove my label").click()  # hidden again: not labelled
    expect(page.locator("#label-status")).to_have_text("Not labelled by you yet.")
    expect(page.locator('.result-card[data-metric="faithfulness"] .masked-note')).to_be_visible()
    with as_user(server, keys["admin"]) as http:
        assert data(http.get(f"{RUNS}/{run_id}/rows/5/labels")) == []
    # the graded label's agreement: the judge's grades against the admin's, counted
    page.goto(f"{server.url}/#/runs/{run_id}/review")
    graded = page.locator('.agreement-metric table.confusion[data-against="admin"]')
    expect(graded.locator("caption")).to_contain_text("against admin's (columns)")
    expect(graded.locator("tbody tr")).to_have_count(6)  # the grades 0 to 5
    counts = [int(x) for x in graded.locator("tbody td").all_inner_texts()]
    assert len(counts) == 36 and sum(counts) == 1  # one row labelled on this metric
    shoot(page, "dashboard-review-en-confusion")
    assert errors == []


def test_the_runs_owner_makes_a_queue_with_the_form(
    page: Page, served: Served, shoot: Shoot
) -> None:
    errors = page_errors(page)
    server, keys, run_id, _queues = served
    _sign_in(page, server, keys["member"])
    page.goto(f"{server.url}/#/runs/{run_id}/review")
    # the view is whole once the agreement is drawn: a queue made while the server still
    # computes it (bootstrap intervals) can wait behind it on a busy machine
    expect(page.locator("#review-agreement #agree-title")).to_be_visible()
    page.get_by_label("Sampling rule").select_option("stratified")
    page.get_by_label("Rows per reviewer").fill("4")
    page.get_by_label("Reviewers", exact=True).fill("reviewer, rev2")
    page.get_by_label("Reviewers per row (k)").fill("3")
    page.get_by_role("button", name="Make the queue").click()
    expect(page.locator("#q-error")).to_contain_text(
        "k: 3 reviewers per row, but only 2 reviewers given", timeout=15_000
    )
    page.get_by_label("Reviewers per row (k)").fill("2")
    page.get_by_label("Score bins (stratified)").fill("21")
    page.get_by_role("button", name="Make the queue").click()
    expect(page.locator("#q-error")).to_contain_text("MAX_STRATA")
    page.get_by_label("Score bins (stratified)").fill("2")
    page.get_by_role("button", name="Make the queue").click()
    made = page.locator("table.review-queues tbody tr").last
    expect(made).to_contain_text("stratified by score")
    # rows a reviewer labelled on this metric before (another queue) count as done here too
    expect(made.locator('li[data-reviewer="reviewer"]')).to_contain_text(re.compile(r"\d / 4"))
    expect(made.locator('li[data-reviewer="rev2"]')).to_contain_text(re.compile(r"\d / 4"))
    expect(made).to_contain_text("4 of 24, ×2")
    expect(page.locator("#q-error")).to_have_text("")
    shoot(page, "dashboard-review-en-form")
    page.select_option("#lang", "zh")
    expect(page.get_by_role("button", name="创建队列")).to_be_visible()
    shoot(page, "dashboard-review-zh-form")
    assert errors == []


def test_compare_gives_each_runs_corrected_mean(page: Page, served: Served, shoot: Shoot) -> None:
    """A second run of the same dataset version shares its labels: Compare gives both runs'
    corrected means beside the paired statistics, said to be unpaired."""
    server, keys, run_id, _queues = served
    with server.client(keys["member"]) as http:
        request = {"scene_key": "dataset", "datasets_name": "steps",
                   "evaluate_metrics": ["faithfulness"], "context": {"model": "scripted"}}  # fmt: skip
        other = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
        assert wait_run(http, other)["state"] == "done"
    with as_user(server, keys["reviewer"]) as http:
        for row in range(12):
            body = {"metric": "faithfulness", "value": float(row % 2)}
            data(http.put(f"{RUNS}/{run_id}/rows/{row}/labels", json=body))
    _sign_in(page, server, keys["viewer"])
    page.goto(f"{server.url}/#/compare/{run_id}/{other}")
    found = page.locator('#compare-calibrated tr[data-metric="faithfulness"]')
    expect(found).to_contain_text(re.compile(r"\d\.\d{3} \[.*\], \d+ labels.*\d\.\d{3}"))
    expect(page.locator("#compare-calibrated")).to_contain_text("unpaired")
    shoot(page, "dashboard-compare-calibrated-en")


def test_the_run_view_names_the_judges_card(page: Page, served: Served, shoot: Shoot) -> None:
    """A card of the run's judge model on faithfulness (``ragmeter judge card`` over
    RAGTruth) shows beside that metric's score, and on no other metric."""
    server, keys, run_id, _queues = served
    done = run(
        "judge", "card", "--judge-model", "scripted", "--metric", "faithfulness",
        "--suites-dir", str(judge_suites()), "--suite", "ragtruth", "--limit", "6",
        home=server.home, env={STORE_URL_ENV: server.store_url},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    _sign_in(page, server, keys["viewer"])
    page.goto(f"{server.url}/#/runs/{run_id}")
    card = page.locator('.metric-card[data-metric="faithfulness"] .judge-card')
    expect(card).to_contain_text(re.compile(r"Judge card: κ .*n \d+, ragtruth"))
    expect(
        page.locator('.metric-card[data-metric="AnswerRelevancyMetric"] .judge-card')
    ).to_have_count(0)
    page.select_option("#lang", "zh")
    expect(card).to_contain_text("评审模型评测卡")
    shoot(page, "dashboard-run-judge-card-zh")
