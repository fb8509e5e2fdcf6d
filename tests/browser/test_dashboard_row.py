"""The dashboard's Row view in real Chromium over a real ``ragmeter serve``, a run judged by the
scripted judge and a run from a store written before the judge's reasoning was kept: the
statements with their verdict marks and reasons, the questions with their cosines, the
per-context verdicts and the 0-5 feedback; the word diff of the response against the reference
(and a 100 KB response cut, not hanging the tab); retrieved contexts with relevance marked;
prev/next links by keyboard; "not recorded" for the old result; English and Chinese."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.integration.helpers import scripted_home
from tests.integration.old_store import OLD_RUN, write_old_store
from tests.integration.service import ServiceProcess, data, wait_run

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]

METRICS = [
    "faithfulness",
    "answer_correctness",
    "answer_relevancy",
    "context_precision",
    "AnswerRelevancyMetric",
    "hit_rate",
]
LONG = " ".join(f"Step {i} copies file {i} to the target folder." for i in range(2200))
ROWS = [
    {
        "query": "What does the installer do?",
        "response": "The installer copies the files. It also paints the house.",
        "reference": "The installer copies the files. It checks the version.",
        "retrieved_contexts": [
            "Tea grows in the hills of Yunnan.",
            "The installer copies the files and checks the version.",
        ],
        "retrieved_ids": ["tea-1", "install-2"],
        "reference_ids": ["install-2"],
    },
    {
        "query": "安装程序做什么？",
        "response": "安装程序复制文件。它还会检查版本。",
        "reference": "安装程序复制文件。它会检查版本号。",
        "retrieved_contexts": ["安装程序复制文件，并检查版本。"],
        "reference_contexts": ["安装程序复制文件，并检查版本。"],
    },
]
#: a 100 KB response, scored without a judge (the diff is the dashboard's own work)
LONG_ROW = {
    "query": "What do the steps do?",
    "response": LONG,
    "reference": LONG.replace("target", "destination"),
    "retrieved_contexts": ["Each step copies one file."],
    "reference_contexts": ["Each step copies one file."],
}


def _start(http: httpx.Client, name: str, rows: list[dict[str, Any]], **request: Any) -> str:
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    files = {"file": (f"{name}.jsonl", body, "application/x-ndjson")}
    data(http.post("/datasets", files=files), 201)
    request.update(scene_key="dataset", datasets_name=name)
    run_id: str = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
    assert wait_run(http, run_id)["state"] == "done"
    return run_id


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    store_kind: str,
) -> Iterator[tuple[ServiceProcess, str, str]]:
    home = tmp_path_factory.mktemp("dashboard-row")
    write_old_store(home)  # the server upgrades it; its run keeps null details
    with (
        scripted_home(home),
        ServiceProcess(home, keys=None) as server,
        server.client(None) as http,
    ):
        judged = {"model": "scripted", "embedding_model": "hashed"}
        run_id = _start(http, "installer", ROWS, evaluate_metrics=METRICS, context=judged)
        long_id = _start(http, "long", [LONG_ROW], evaluate_metrics=["hit_rate"])
        yield server, run_id, long_id


def _open(page: Page, server: ServiceProcess, run_id: str, index: int) -> None:
    page.goto(f"{server.url}/#/runs/{run_id}/rows/{index}")
    page.wait_for_selector(".result-cards, .error")


def test_the_row_view_shows_the_judges_reasoning(
    page: Page, served: tuple[ServiceProcess, str, str], shoot: Shoot
) -> None:
    server, run_id, _long = served
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server.url}/#/runs/{run_id}")
    page.get_by_role("link", name="Open row 0").click()
    expect(page).to_have_url(re.compile(f"#/runs/{run_id}/rows/0$"))
    expect(page.locator("h1")).to_have_text("Row 0")
    faithful = page.locator('.result-card[data-metric="faithfulness"] .detail-items li')
    expect(faithful).to_have_count(2)
    expect(faithful.nth(0)).to_contain_text("The installer copies the files.")
    expect(faithful.nth(0)).to_contain_text("found in the contexts")
    expect(faithful.nth(0).get_by_role("img", name="yes")).to_be_visible()
    expect(faithful.nth(1)).to_contain_text("It also paints the house.")
    expect(faithful.nth(1).get_by_role("img", name="no")).to_be_visible()
    card = page.locator('.result-card[data-metric="faithfulness"]')
    expect(card).to_contain_text("supported by the retrieved contexts?")
    questions = page.locator('.result-card[data-metric="answer_relevancy"] .detail-items li')
    expect(questions).to_have_count(3)
    expect(questions.first).to_contain_text(re.compile(r"cosine \d\.\d{3}"))
    judged = page.locator('.result-card[data-metric="context_precision"] .detail-items li')
    expect(judged).to_have_count(2)
    expect(judged.nth(0)).to_contain_text("rank 1")
    feedback = page.locator('.result-card[data-metric="AnswerRelevancyMetric"]')
    expect(feedback).to_contain_text(re.compile(r"score \d\.\d / 5"))
    expect(
        page.locator('.result-card[data-metric="answer_correctness"] .detail-values')
    ).to_contain_text("F1")
    # hit_rate has no judge: no reasoning, and no "not recorded" either
    expect(page.locator('.result-card[data-metric="hit_rate"] .not-recorded')).to_have_count(0)
    shoot(page, "dashboard-row-en")
    assert errors == []


def test_the_diff_and_the_contexts_with_relevance(
    page: Page, served: tuple[ServiceProcess, str, str]
) -> None:
    server, run_id, _long = served
    _open(page, server, run_id, 0)
    diff = page.locator("p.diff")
    expect(diff.locator("ins")).to_have_text(["also", "paints ", "house."])
    expect(diff.locator("del")).to_have_text(["checks", "version."])
    expect(diff).to_contain_text("The installer copies the files.")
    contexts = page.locator("ol.contexts li")
    expect(contexts).to_have_count(2)
    expect(contexts.nth(0)).to_contain_text("#1")
    expect(contexts.nth(0)).to_contain_text("not relevant")
    expect(contexts.nth(0)).to_contain_text("tea-1")
    expect(contexts.nth(1)).to_contain_text("relevant")
    expect(contexts.nth(1)).to_have_class("relevant")
    expect(page.locator("#row-match")).to_contain_text("by id")
    expect(page.locator("#row-match")).to_contain_text("1 of 1")
    expect(page.locator("ol.contexts")).not_to_contain_text("(grade")  # ids alone: no grades


GRADED = [
    {
        "query": "Which sections explain the installer?",
        "retrieved_ids": ["intro", "install", "faq"],
        "retrieved_contexts": ["About this manual.", "Run the installer.", "Questions."],
        "reference_relevance": {"intro": 1, "install": 2, "upgrade": 3, "faq": 0},
    }
]


@pytest.fixture(scope="module")
def graded_run(served: tuple[ServiceProcess, str, str]) -> str:
    """A run of a graded row judged at relevance level 2 (``context.relevance_level``)."""
    server, _run, _long = served
    with server.client(None) as http:
        return _start(
            http,
            "graded",
            GRADED,
            evaluate_metrics=["ndcg", "precision"],
            context={"relevance_level": 2},
        )


def test_graded_contexts_show_their_grade_judged_at_the_runs_level(
    page: Page, served: tuple[ServiceProcess, str, str], graded_run: str, shoot: Shoot
) -> None:
    server, _run, _long = served
    _open(page, server, graded_run, 0)
    contexts = page.locator("ol.contexts li")
    expect(contexts).to_have_count(3)
    expect(contexts.nth(0)).to_contain_text("not relevant")  # grade 1 is below level 2
    expect(contexts.nth(0)).to_contain_text("(grade 1)")
    expect(contexts.nth(1)).to_have_class("relevant")
    expect(contexts.nth(1)).to_contain_text("(grade 2)")
    expect(contexts.nth(2)).to_contain_text("(grade 0)")
    expect(page.locator("#row-match")).to_contain_text("relevant from grade 2")
    expect(page.locator("#row-match")).to_contain_text("1 of 2")  # install and upgrade
    expect(page.locator('.result-card[data-metric="precision"]')).to_contain_text("0.333")
    shoot(page, "dashboard-row-graded")


def test_prev_and_next_by_keyboard(page: Page, served: tuple[ServiceProcess, str, str]) -> None:
    server, run_id, _long = served
    _open(page, server, run_id, 0)
    expect(page.get_by_role("link", name="← Previous row")).to_have_count(0)  # the first row
    page.get_by_role("link", name="Next row →").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(f"#/runs/{run_id}/rows/1$"))
    expect(page.locator("h1")).to_have_text("Row 1")
    expect(page.locator("#row-match")).to_contain_text("by exact text")
    page.get_by_role("link", name="← Previous row").focus()
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("Row 0")


def test_a_100_kb_response_is_diffed_in_part_without_hanging(
    page: Page, served: tuple[ServiceProcess, str, str], shoot: Shoot
) -> None:
    server, _run, long_id = served
    _open(page, server, long_id, 0)
    expect(page.locator("p.diff")).to_contain_text("Step 2199 copies file 2199")  # all shown
    expect(page.locator("p.diff del").first).to_have_text("destination")
    expect(page.locator("p.diff ins").first).to_have_text("target")
    expect(page.get_by_text("The diff covers the first 1500 words")).to_be_visible()
    shoot(page, "dashboard-row-long")


def test_chinese_text_and_not_recorded_for_an_old_result(
    page: Page, served: tuple[ServiceProcess, str, str], shoot: Shoot
) -> None:
    server, run_id, _long = served
    _open(page, server, run_id, 1)
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("h1")).to_have_text("第 1 行")
    expect(page.locator("p.diff ins")).to_have_text(["还"])
    expect(page.locator("p.diff del")).to_have_text(["号"])
    expect(page.locator('.result-card[data-metric="faithfulness"]')).to_contain_text(
        "能否由检索到的上下文支持？"
    )
    expect(page.locator("ol.contexts li").first).to_contain_text("相关")
    shoot(page, "dashboard-row-zh")
    _open(page, server, OLD_RUN, 0)
    old = page.locator('.result-card[data-metric="faithfulness"] .not-recorded')
    expect(old).to_contain_text("未记录")
    expect(page.locator('.result-card[data-metric="hit_rate"] .not-recorded')).to_have_count(0)
    shoot(page, "dashboard-row-old-zh")
    page.get_by_label("语言").select_option("en")
    expect(old).to_contain_text("not recorded")
    shoot(page, "dashboard-row-old-en")


def test_a_row_that_is_not_there_says_so(
    page: Page, served: tuple[ServiceProcess, str, str]
) -> None:
    server, run_id, _long = served
    _open(page, server, run_id, 7)
    expect(page.get_by_role("alert")).to_contain_text("no row 7")


AGENT_ROW = {
    "messages": [
        {"role": "user", "content": "Weather in Paris, and Rome for 2 days?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            {"id": "b", "type": "function",
             "function": {"name": "weather", "arguments": '{"days": 3, "city": "Rome"}'}},
            {"id": "c", "type": "function",
             "function": {"name": "news", "arguments": '{"topic": "Rome"}'}},
        ]},
        {"role": "tool", "tool_call_id": "a", "content": "Paris: 18C"},
        {"role": "tool", "tool_call_id": "b", "content": "Rome: 21C, 22C, 20C"},
        {"role": "tool", "tool_call_id": "c", "content": "no news"},
        {"role": "assistant", "content": "Paris 18C; Rome 21C then 22C."},
    ],
    "reference_tool_calls": [
        {"name": "weather", "arguments": {"city": "Paris"}},
        {"name": "weather", "arguments": {"city": "Rome", "days": 2.0}},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def agent_run(served: tuple[ServiceProcess, str, str]) -> str:
    server = served[0]
    with server.client(None) as http:
        context = {"model": "scripted"}
        metrics = ["task_completion", "knowledge_retention"]
        return _start(http, "agent", [AGENT_ROW], evaluate_metrics=metrics, context=context)


def test_an_agent_row_shows_its_calls_side_by_side_and_its_steps(
    page: Page, served: tuple[ServiceProcess, str, str], agent_run: str, shoot: Shoot
) -> None:
    server = served[0]
    _open(page, server, agent_run, 0)
    rows = page.locator("table.calls tbody tr")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-status") for i in range(3)] == [
        "match", "arguments", "extra",
    ]  # fmt: skip
    expect(rows.nth(0)).to_contain_text('weather({"city":"Paris"})')
    # days 2.0 expected, 3 made: that argument is diffed, the equal city is not
    diff = rows.nth(1).locator("ul.arg-diff li")
    expect(diff).to_have_count(1)
    expect(diff).to_have_text("days: 2 → 3")
    expect(rows.nth(2).locator(".badge")).to_have_text("extra")
    steps = page.locator("ol.steps > li")
    expect(steps).to_have_count(6)
    expect(steps.nth(1)).to_contain_text("Rome: 21C, 22C, 20C")  # each call with its result
    expect(page.locator("#row-contexts")).to_have_count(0)  # the trajectory takes their place
    expect(page.locator("section[aria-labelledby=row-response]")).to_contain_text(
        "Paris 18C; Rome 21C then 22C."
    )  # the agent's last reply
    expect(page.locator(".result-card")).to_have_count(2)
    shoot(page, "row-trajectory")
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("#row-trajectory")).to_have_text("工具调用：期望与实际")
    expect(rows.nth(2).locator(".badge")).to_have_text("多余")
    shoot(page, "row-trajectory-zh")
