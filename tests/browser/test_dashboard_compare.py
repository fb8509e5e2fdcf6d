"""The dashboard's Compare view in real Chromium over a real ``ragmeter serve`` and three real
runs of the same 100 rows (retrieval metrics: no judge): a baseline; a candidate whose
retriever lost the reference on 30% of the rows (shown "worse", p < 0.05 after Bonferroni's
correction and a 95% family-wise interval below 0, those rows listed first); and a candidate
that moved six references up or down one rank in equal measure (shown "no evidence of a
difference", and "equivalent" only with a margin). The header says how the numbers are
corrected; a flat interval reads "not informative". Runs are picked from the Runs view; the
choices live in the URL."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import FloatRect, Page, expect

from tests.integration.service import ServiceProcess, data, wait_run

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]
RANKS = ["a", "b", "c"]
ROWS = 100


def _row(i: int, reference: str) -> dict[str, Any]:
    query = f"How is part {i} configured?" + (" 如何配置数据库" if i == 20 else "")
    return {"id": f"row-{i}", "query": query, "retrieved_ids": RANKS, "reference_ids": [reference]}


BASE = [_row(i, RANKS[i % 3]) for i in range(ROWS)]
#: rows whose reference the regressed retriever no longer finds (30%)
LOST = {i for i in range(ROWS) if i % 10 < 3}
REGRESSED = [_row(i, "z" if i in LOST else RANKS[i % 3]) for i in range(ROWS)]
#: rank 1 -> 2 on three rows (-0.5 each), rank 2 -> 1 on three others (+0.5 each)
DOWN = {i for i in range(ROWS) if i % 10 == 5 and i % 3 == 0}
UP = {i for i in range(ROWS) if i % 10 == 6 and i % 3 == 1}
NOISY = [_row(i, "b" if i in DOWN else "a" if i in UP else RANKS[i % 3]) for i in range(ROWS)]


def _run(http: Any, name: str, rows: list[dict[str, Any]]) -> str:
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    files = {"file": (f"{name}.jsonl", body, "application/x-ndjson")}
    data(http.post("/datasets", params={"name": name}, files=files), 201)
    request = {
        "scene_key": "dataset",
        "datasets_name": name,
        "evaluate_metrics": ["mrr", "hit_rate"],
    }
    run_id: str = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
    assert wait_run(http, run_id)["state"] == "done"
    return run_id


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    store_kind: str,
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    home = tmp_path_factory.mktemp("dashboard-compare")
    with ServiceProcess(home, keys=None) as server, server.client(None) as http:
        runs = {name: _run(http, name, rows) for name, rows in
                (("baseline", BASE), ("regressed", REGRESSED), ("noisy", NOISY))}  # fmt: skip
        yield server, runs


def _api(server: ServiceProcess, path: str, **params: Any) -> Any:
    with server.client(None) as http:
        return data(http.get(path, params=params))


def _verdict(page: Page, metric: str) -> str:
    cell = page.locator(f'table.compare-metrics tr[data-metric="{metric}"] .verdict')
    return str(cell.get_attribute("data-verdict"))


#: the part of the Compare view the README shows
README_CLIP: FloatRect = {"x": 0, "y": 0, "width": 1280, "height": 1100}


def test_a_regression_on_30_percent_of_rows_is_worse_and_its_rows_come_first(
    page: Page, served: tuple[ServiceProcess, dict[str, str]], shoot: Shoot
) -> None:
    server, runs = served
    base, regressed = runs["baseline"], runs["regressed"]
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server.url}/#/runs")
    page.wait_for_selector("table.runs")
    button = page.get_by_role("button", name=re.compile(r"Compare selected"))
    expect(button).to_be_disabled()
    page.get_by_label(f"Select run {base[:12]} to compare").check()
    page.get_by_label(f"Select run {regressed[:12]} to compare").check()
    expect(page.get_by_label(f"Select run {runs['noisy'][:12]} to compare")).to_be_disabled()
    expect(button).to_have_text("Compare selected (2/2)")
    shoot(page, "dashboard-compare-pick-en")
    button.click()
    expect(page).to_have_url(re.compile(f"#/compare/{base}/{regressed}"))
    page.wait_for_selector("table.pairs")
    expect(page.locator("h1")).to_have_text("Compare runs")
    expect(page.get_by_label("Baseline", exact=True)).to_have_value(base)
    expect(page.get_by_label("Candidate", exact=True)).to_have_value(regressed)
    compared = {
        c["metric_name"]: c for c in _api(server, f"/evaluate/runs/{base}/compare/{regressed}")
    }
    for metric in ("mrr", "hit_rate"):
        c = compared[metric]
        assert c["verdict"] == "worse" and c["p_adjusted"] < 0.05 and c["worse"] == 30
        assert c["ci95_high"] < 0 and (c["correction"], c["family"]) == ("bonferroni", 2)
        row = page.locator(f'table.compare-metrics tr[data-metric="{metric}"]')
        expect(row.locator("th")).to_have_text(f"{metric} (0–1)")
        expect(row.locator(".verdict")).to_have_text("▼ worse")
        expect(row).to_contain_text(f"{c['base_mean']:.3f}")
        expect(row).to_contain_text(f"{c['other_mean']:.3f}")
        expect(row).to_contain_text(f"−{abs(c['delta']):.3f} [−{abs(c['ci95_low']):.3f}, ")
        expect(row).to_contain_text("< 0.001")
        expect(row).to_contain_text("0 / 0")
    expect(page.locator("table.compare-metrics caption")).to_contain_text("paired by their id")
    head = page.locator("table.compare-metrics thead")
    expect(head).to_contain_text("Paired difference [95% family-wise CI]")
    expect(head).to_contain_text("p (Bonferroni)")
    expect(page.locator("#compare-correction")).to_contain_text(
        "corrected together for the 2 metrics compared (each interval at 97.5%)"
    )
    # the row table: mrr (the first metric), the 30 lost rows first, worst drop first
    expect(page.locator("table.pairs caption")).to_have_text("100 paired rows")
    shown = page.locator("table.pairs tbody tr")
    expect(shown).to_have_count(50)
    rows = shown.evaluate_all("rows => rows.map(r => Number(r.dataset.row))")
    assert set(rows[:30]) == LOST and rows[:10] == sorted(i for i in LOST if i % 3 == 0)[:10]
    first = shown.first.get_by_role("link")
    expect(first).to_have_attribute("href", f"#/runs/{regressed}/rows/0")
    expect(shown.first.locator("td.delta")).to_have_text("−1.000")
    expect(page.locator('table.pairs tr[data-row="20"]')).to_contain_text("如何配置数据库")
    # the scatter: one dot per distinct (baseline, candidate) point, counts summing to 100
    scatter = _api(server, f"/evaluate/runs/{base}/compare/{regressed}/scatter", metric="mrr")
    dots = page.locator("svg.scatter circle.dot")
    expect(dots).to_have_count(len(scatter["points"]))
    counts = dots.evaluate_all("dots => dots.map(d => Number(d.dataset.count))")
    assert sum(counts) == 100 and len(page.locator("svg.scatter circle.worse").all()) == 3
    shot = shoot(page, "dashboard-compare-regressed-en")
    # the README's picture, docs/assets/dashboard-compare.png, is a copy of this one: the top
    # 1100 px of the view (copy it there when the view changes)
    readme = shot.with_name("readme-dashboard-compare.png")
    page.screenshot(path=str(readme), full_page=True, clip=README_CLIP)
    page.get_by_label("Regressions only").check()
    expect(page).to_have_url(re.compile(r"metric=mrr&worse=1$"))
    expect(page.locator("table.pairs caption")).to_have_text("30 paired rows")
    expect(shown).to_have_count(30)
    page.get_by_label("Metric", exact=True).select_option("hit_rate")
    expect(page).to_have_url(re.compile(r"metric=hit_rate&worse=1$"))
    expect(page.locator("table.pairs caption")).to_have_text("30 paired rows")
    page.reload()
    page.wait_for_selector("table.pairs")
    expect(page.get_by_label("Metric", exact=True)).to_have_value("hit_rate")
    expect(page.get_by_label("Regressions only")).to_be_checked()
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("h1")).to_have_text("对比运行")
    expect(page.locator('tr[data-metric="mrr"] .verdict')).to_have_text("▼ 更差")
    expect(head).to_contain_text("配对差值 [95% 联合置信区间]")
    expect(head).to_contain_text("p 值（Bonferroni 校正）")
    expect(page.locator("#compare-correction")).to_contain_text("针对所比较的 2 个指标一并校正")
    expect(page.locator("table.pairs caption")).to_have_text("共 30 个配对行")
    shoot(page, "dashboard-compare-regressed-zh")
    page.get_by_role("link", name="打开候选运行的第 0 行").click()
    expect(page).to_have_url(re.compile(f"#/runs/{regressed}/rows/0$"))
    assert errors == []


def _noisy(
    page: Page, served: tuple[ServiceProcess, dict[str, str]], **params: Any
) -> tuple[str, str, dict[str, dict[str, Any]]]:
    """The baseline against the noisy run, opened (with ``params`` in the URL), and the
    API's comparison of them by metric."""
    server, runs = served
    base, noisy = runs["baseline"], runs["noisy"]
    asked = "&".join(f"{k}={v}" for k, v in params.items())
    page.goto(f"{server.url}/#/compare/{base}/{noisy}" + (f"?{asked}" if asked else ""))
    page.wait_for_selector("table.pairs")
    found = _api(server, f"/evaluate/runs/{base}/compare/{noisy}", **params)
    return base, noisy, {c["metric_name"]: c for c in found}


def test_noise_alone_is_no_evidence_and_swapping_keeps_the_choices(
    page: Page, served: tuple[ServiceProcess, dict[str, str]], shoot: Shoot
) -> None:
    base, noisy, compared = _noisy(page, served)
    assert compared["mrr"]["verdict"] == "no_evidence" and compared["mrr"]["p_adjusted"] > 0.05
    assert (compared["mrr"]["worse"], compared["mrr"]["better"]) == (3, 3)
    assert _verdict(page, "mrr") == "no_evidence" == _verdict(page, "hit_rate")
    expect(page.locator('tr[data-metric="mrr"] .verdict')).to_have_text(
        "· no evidence of a difference"
    )
    # every hit_rate difference is 0: its interval is shown as not informative, not as 0 to 0
    assert compared["hit_rate"]["ci_note"] == "interval not informative: all 100 values equal"
    expect(page.locator('tr[data-metric="hit_rate"] td.delta')).to_contain_text(
        "interval not informative (n=100)"
    )
    expect(page.locator("table.compare-metrics")).not_to_contain_text("same")
    expect(page.locator("table.pairs tbody tr")).to_have_count(50)  # the rows, once here
    rows = page.locator("table.pairs tbody tr").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.row))"
    )
    assert set(rows[:3]) == DOWN and not UP & set(rows)
    page.get_by_role("button", name="Next").click()
    expect(page).to_have_url(re.compile(r"page=2$"))
    expect(page.locator("table.pairs tbody tr").first).not_to_have_attribute(
        "data-row", str(rows[0])
    )
    rows = page.locator("table.pairs tbody tr").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.row))"
    )
    assert len(rows) == 50 and set(rows[-3:]) == UP  # what got better comes last
    page.get_by_label("Regressions only").check()
    expect(page.locator("table.pairs tbody tr")).to_have_count(3)
    shoot(page, "dashboard-compare-noise-en")
    page.get_by_role("button", name="Swap").click()
    expect(page).to_have_url(re.compile(f"#/compare/{noisy}/{base}\\?metric=mrr&worse=1$"))
    # the swapped comparison's rows replace the table once they arrive: wait for three
    expect(page.locator("table.pairs tbody tr")).to_have_count(3)
    page.wait_for_function(
        "ids => [...document.querySelectorAll('table.pairs tbody tr')]"
        ".map(r => Number(r.dataset.row)).sort((a, b) => a - b).join() === ids",
        arg=",".join(map(str, sorted(UP))),
    )  # swapped: what got better is now what got worse


def test_the_view_asks_for_two_runs_and_the_pickers_open_a_comparison(
    page: Page, served: tuple[ServiceProcess, dict[str, str]], shoot: Shoot
) -> None:
    server, runs = served
    page.goto(f"{server.url}/#/compare")
    expect(page.locator("#compare-summary .empty")).to_contain_text("Choose a baseline run")
    expect(page.get_by_role("link", name="Compare")).to_have_attribute("aria-current", "page")
    shoot(page, "dashboard-compare-empty-en")
    page.get_by_label("Baseline", exact=True).select_option(runs["baseline"])
    expect(page).to_have_url(re.compile(f"#/compare/{runs['baseline']}$"))
    page.get_by_label("Candidate", exact=True).select_option(runs["regressed"])
    expect(page).to_have_url(re.compile(f"#/compare/{runs['baseline']}/{runs['regressed']}$"))
    page.wait_for_selector("table.pairs")
    expect(page.locator('tr[data-metric="mrr"] .verdict')).to_have_text("▼ worse")


def test_a_margin_makes_equivalence_and_a_small_run_is_not_informative(
    page: Page, served: tuple[ServiceProcess, dict[str, str]], shoot: Shoot
) -> None:
    server, _ = served
    _, _, compared = _noisy(page, served, margin=0.1)
    expect(page.get_by_label("Equivalence margin")).to_have_value("0.1")
    mrr = compared["mrr"]
    assert mrr["verdict"] == "equivalent" and -0.1 < mrr["ci95_low"] < mrr["ci95_high"] < 0.1
    assert compared["hit_rate"]["verdict"] == "no_evidence"  # a flat interval shows nothing
    expect(page.locator('tr[data-metric="mrr"] .verdict')).to_have_text("= equivalent (±0.1)")
    expect(page.locator("#compare-correction")).to_contain_text("inside ±0.1")
    expect(page.locator('tr[data-metric="hit_rate"] td.delta .note')).to_have_text(
        "BCa undefined: all differences are equal"
    )
    shoot(page, "dashboard-compare-margin-en")
    page.get_by_label("Language").select_option("zh")
    expect(page.locator('tr[data-metric="mrr"] .verdict')).to_have_text("= 等效（±0.1）")
    expect(page.locator('tr[data-metric="hit_rate"] .verdict')).to_have_text("· 无证据表明有差异")
    expect(page.locator('tr[data-metric="hit_rate"] td.delta')).to_contain_text(
        "区间无参考意义（n=100）"
    )
    # the server's note on the interval, in the reader's language
    flat = page.locator('tr[data-metric="hit_rate"] td.delta .note')
    expect(flat).to_have_text("无法使用 BCa：所有差值都相同")
    shoot(page, "dashboard-compare-margin-zh")
    page.get_by_label("等效界值").fill("")
    page.get_by_label("等效界值").dispatch_event("change")
    expect(page).not_to_have_url(re.compile("margin="))
    expect(page.locator('tr[data-metric="mrr"] .verdict')).to_have_text("· 无证据表明有差异")
    # a run of 5 rows: its Run view says its intervals are not informative, and the scale
    with server.client(None) as http:
        small = _run(http, "small", BASE[:5])
    page.get_by_label("语言").select_option("en")
    page.goto(f"{server.url}/#/runs/{small}")
    card = page.locator('.metric-card[data-metric="mrr"]')
    expect(card.locator("h3")).to_have_text("mrr (0–1)")
    expect(card).to_contain_text("interval not informative (n=5)")
    summary = _api(server, f"/evaluate/runs/{small}")["summary"]["mrr"]
    assert summary["small_sample"] is True and summary["scale"] == "0–1"
    assert summary["ci_note"] == "interval not informative: 5 values (fewer than 30)"
    shoot(page, "dashboard-run-small-en")
    page.get_by_label("Language").select_option("zh")
    expect(card).to_contain_text("区间无参考意义（n=5）")
    shoot(page, "dashboard-run-small-zh")
