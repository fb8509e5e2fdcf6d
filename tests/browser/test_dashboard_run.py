"""The dashboard's Run view in real Chromium over a real ``ragmeter serve`` and a real run
(retrieval metrics: no judge; every fourth row has no reference, so a null with its reason):
the API's exact means and CIs, the histograms, the null reasons; sorting, failures first, a
score threshold and text search change the table and the URL and survive a reload; paging."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ragmeter.metrics.retrieval.ranking import NO_RELEVANT_REASON
from tests.integration.service import ServiceProcess, data, wait_run

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]

#: 120 rows: the reference is rank 1, 2 or absent from the results; every fourth row has none
ROWS = [
    {
        "query": f"How do I configure part {i}?" + (" 配置数据库" if i == 42 else ""),
        "response": f"Part {i} is configured in settings.toml.",
        "retrieved_ids": ["a", "b", "c"],
        "reference_ids": [] if i % 4 == 3 else [["a", "b", "z"][i % 3]],
    }
    for i in range(120)
]


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, str]]:
    home = tmp_path_factory.mktemp("dashboard-run")
    with ServiceProcess(home, keys=None) as server, server.client(None) as http:
        body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in ROWS).encode()
        files = {"file": ("parts.jsonl", body, "application/x-ndjson")}
        data(http.post("/datasets", params={"name": "parts"}, files=files), 201)
        request = {"scene_key": "dataset", "datasets_name": "parts"}
        request["evaluate_metrics"] = ["hit_rate", "mrr"]
        run_id = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
        yield server, run_id


def _api(server: ServiceProcess, path: str, **params: Any) -> Any:
    with server.client(None) as http:
        return data(http.get(path, params=params))


def _open(page: Page, server: ServiceProcess, run_id: str, search: str = "") -> None:
    page.goto(f"{server.url}/#/runs/{run_id}{search}")
    page.wait_for_selector("table.rows, .empty")


def _shown_rows(page: Page) -> list[int]:
    return [
        int(x)
        for x in page.locator("table.rows tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.row)"
        )
    ]


def test_the_run_view_shows_the_apis_summary_histograms_and_null_reasons(
    page: Page, served: tuple[ServiceProcess, str], shoot: Shoot
) -> None:
    server, run_id = served
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server.url}/#/runs")
    page.locator(f'tr[data-run="{run_id}"] th a').click()  # the run's name (or target label)
    expect(page).to_have_url(re.compile(f"#/runs/{run_id}$"))
    page.wait_for_selector("table.rows")
    run = _api(server, f"/evaluate/runs/{run_id}")
    found = {d["metric_name"]: d for d in _api(server, f"/evaluate/runs/{run_id}/distribution")}
    expect(page.locator("h1")).to_have_text(run["name"] or run["label"])
    expect(page.locator("#run-head .subtitle")).to_have_text(f"Run {run_id[:12]}")
    expect(page.locator("#run-state")).to_have_text("done")
    expect(page.locator("#run-head")).to_contain_text("120 of 120 rows")
    expect(page.locator("#run-head")).not_to_contain_text("null")  # nothing stray
    for name in ("hit_rate", "mrr"):
        s = run["summary"][name]
        card = page.locator(f'.metric-card[data-metric="{name}"]')
        expect(card.locator(".big")).to_have_text(
            f"{s['mean']:.3f} [{s['ci95_low']:.3f}, {s['ci95_high']:.3f}]"
        )
        expect(card).to_contain_text(f"{s['count']} scored, {s['null']} null")
        bars = card.locator("svg.histogram rect.bar")
        expect(bars).to_have_count(len(found[name]["counts"]))
        shown = bars.evaluate_all("bars => bars.map(b => Number(b.dataset.count))")
        assert shown == found[name]["counts"] and sum(shown) == s["count"] == 90
        reasons = card.locator("ul.null-reasons li")
        expect(reasons).to_have_count(1)
        expect(reasons).to_contain_text(NO_RELEVANT_REASON)
        expect(reasons).to_contain_text("× 30")
    expect(page.locator("table.rows caption")).to_have_text("120 rows")
    assert _shown_rows(page) == list(range(50))
    expect(page.locator('tr[data-row="3"] td[data-metric="mrr"]')).to_have_text("null")
    expect(page.locator('tr[data-row="1"] td[data-metric="mrr"]')).to_have_text("0.500")
    shoot(page, "dashboard-run-en")
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("#run-head .subtitle")).to_have_text(f"运行 {run_id[:12]}")
    expect(page.locator("table.rows caption")).to_have_text("共 120 行")
    expect(page.get_by_text("空值及原因").first).to_be_visible()
    shoot(page, "dashboard-run-zh")
    assert errors == []


def test_sorting_and_filters_change_the_table_and_the_url_and_survive_a_reload(
    page: Page, served: tuple[ServiceProcess, str], shoot: Shoot
) -> None:
    server, run_id = served
    _open(page, server, run_id)
    page.get_by_label("Metric").select_option("mrr")
    page.get_by_label("Sort by").select_option("score")
    page.get_by_label("Order").select_option("desc")
    expect(page).to_have_url(re.compile(r"\?metric=mrr&sort=score&order=desc$"))
    api = _api(server, f"/evaluate/runs/{run_id}/rows", metric="mrr", sort="score", order="desc")
    expected = [row["row_index"] for row in api["items"]]
    expect(page.locator("table.rows tbody tr").first).to_have_attribute(
        "data-row", str(expected[0])
    )
    assert _shown_rows(page) == expected
    page.reload()
    page.wait_for_selector("table.rows")
    expect(page.get_by_label("Sort by")).to_have_value("score")
    expect(page.get_by_label("Order")).to_have_value("desc")
    assert _shown_rows(page) == expected
    # failures first: the 30 null rows lead, in descending score (all null) then row order
    page.get_by_label("Failures first").check()
    expect(page).to_have_url(re.compile(r"failures=1"))
    expect(page.locator("table.rows tbody tr").first).to_have_attribute("data-row", "3")
    assert _shown_rows(page)[:30] == [i for i in range(120) if i % 4 == 3]
    shoot(page, "dashboard-run-failures-first")
    page.get_by_role("button", name="Clear filters").click()
    expect(page).to_have_url(re.compile(f"#/runs/{run_id}$"))
    # a threshold: mrr below 0.4 is the rows whose reference was not retrieved
    page.get_by_label("Metric").select_option("mrr")
    page.get_by_label("Score below").fill("0.4")
    expect(page).to_have_url(re.compile(r"below=0\.4"))
    below = [i for i in range(120) if i % 4 != 3 and i % 3 == 2]
    expect(page.locator("table.rows caption")).to_have_text(f"{len(below)} rows")
    assert _shown_rows(page) == below
    page.get_by_role("button", name="Clear filters").click()
    page.get_by_label("Search").fill("配置数据库")
    expect(page).to_have_url(re.compile(r"q=%E9%85%8D"))
    expect(page.locator("table.rows caption")).to_have_text("1 row")
    page.reload()
    page.wait_for_selector("table.rows")
    expect(page.get_by_label("Search")).to_have_value("配置数据库")
    assert _shown_rows(page) == [42]
    page.get_by_label("Search").fill("no such text anywhere")
    expect(page.get_by_text("No row matches these filters.")).to_be_visible()
    shoot(page, "dashboard-run-no-match")


def test_paging_the_rows(page: Page, served: tuple[ServiceProcess, str]) -> None:
    server, run_id = served
    _open(page, server, run_id)
    pager = page.get_by_role("navigation", name="Pages of rows")
    expect(pager).to_contain_text("1–50 of 120")
    pager.get_by_role("button", name="Next").click()
    expect(pager).to_contain_text("51–100 of 120")
    expect(page).to_have_url(re.compile(r"page=2"))
    assert _shown_rows(page) == list(range(50, 100))
    pager.get_by_role("button", name="Next").click()
    expect(pager).to_contain_text("101–120 of 120")
    expect(pager.get_by_role("button", name="Next")).to_be_disabled()
    page.reload()
    page.wait_for_selector("table.rows")
    assert _shown_rows(page) == list(range(100, 120))


def test_an_unknown_run_says_so(page: Page, served: tuple[ServiceProcess, str]) -> None:
    server, _run_id = served
    page.goto(f"{server.url}/#/runs/no-such-run")
    expect(page.get_by_role("alert")).to_contain_text("no run")
