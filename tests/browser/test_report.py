"""The HTML report (``ragmeter report``, ``EvaluationReport.to_html``): one file that opens in
Chromium with every network request refused and makes none, shows the summary, the
histograms, the worst rows with the judge's reasoning and, against a baseline, the paired
comparison and the regressed rows; text from the rows is escaped, never run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ragmeter import evaluate
from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.testing import ScriptedJudgeServer

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]
METRICS = "faithfulness,answer_relevancy,context_precision,answer_correctness,mrr"
HOSTILE = '<script>document.title="pwned"</script><img src="https://example.com/x.png">'


def _rows(worse: bool) -> list[dict[str, object]]:
    rows = synthetic_rows(24)
    for i, row in enumerate(rows):
        row["id"] = f"r{i}"
        ids = [f"c{k}" for k in range(len(row["retrieved_contexts"]))]  # type: ignore[arg-type]
        row["retrieved_ids"] = ids
        # the candidate finds the relevant id lower in half of the rows
        row["reference_ids"] = [ids[2] if worse and i % 2 else ids[0]]
    rows[0]["response"] = HOSTILE
    return rows


def _ragmeter(home: Path, *args: str) -> str:
    env = {**os.environ, "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> dict[str, Path]:
    """Two stored judged runs over the same rows (the candidate's ranks worse) and the
    reports ``ragmeter report`` writes of them, in English against the baseline and in
    Chinese alone."""
    home = tmp_path_factory.mktemp("report-home")
    ids = []
    with ScriptedJudgeServer() as judge:
        for name, worse in (("base", False), ("candidate", True)):
            data = home / f"{name}.jsonl"
            data.write_text("".join(json.dumps(r) + "\n" for r in _rows(worse)), "utf-8")
            out = _ragmeter(
                home, "eval", str(data), "-m", METRICS, "--judge-model", "scripted",
                "--judge-base-url", judge.url, "--embedding-model", "hashed",
                "--embedding-base-url", judge.url,
            )  # fmt: skip
            ids.append(re.search(r"run ([0-9a-f]{32}) stored", out).group(1))  # type: ignore[union-attr]
    base, candidate = ids
    compared = home / "compared.html"
    _ragmeter(home, "report", candidate, "--compare", base, "--out", str(compared))
    chinese = home / "zh.html"
    _ragmeter(home, "report", base, "--out", str(chinese), "--language", "zh", "--worst", "5")
    zh_compared = home / "zh-compared.html"
    _ragmeter(
        home, "report", candidate, "--compare", base, "--out", str(zh_compared),
        "--language", "zh", "--worst", "3",
    )  # fmt: skip
    return {"compared": compared, "zh": chinese, "zh-compared": zh_compared}


def _open_offline(page: Page, path: Path) -> list[str]:
    """Open ``path`` with every request but the file itself refused; the requests made."""
    asked: list[str] = []
    url = path.resolve().as_uri()

    def refuse(route: object) -> None:
        request = route.request  # type: ignore[attr-defined]
        asked.append(request.url)
        if request.url == url:
            route.continue_()  # type: ignore[attr-defined]
        else:
            route.abort()  # type: ignore[attr-defined]

    page.route("**/*", refuse)
    page.goto(url)
    page.wait_for_load_state("load")
    return [u for u in asked if u != url]


def test_the_compared_report_opens_offline_with_its_comparison_and_reasoning(
    page: Page, reports: dict[str, Path], shoot: Shoot
) -> None:
    text = reports["compared"].read_text(encoding="utf-8")
    # no tag points anywhere, the style loads nothing (row text is escaped: not a tag)
    assert not re.search(r"<[a-zA-Z][^>]*\s(src|href|action)\s*=", text)
    style = re.search(r"<style>(.*?)</style>", text, re.S)
    assert style is not None and not re.search(r"url\(|@import", style.group(1))
    assert HOSTILE not in text and "&lt;script&gt;" in text
    assert page.context.browser is not None
    assert _open_offline(page, reports["compared"]) == []
    expect(page).not_to_have_title("pwned")
    expect(page.locator("h1")).to_contain_text("ragmeter report")
    summary = page.locator("table").first
    for name in METRICS.split(","):
        expect(summary).to_contain_text(name)
    assert page.locator("svg[role=img]").count() == len(METRICS.split(","))
    # the candidate ranks the relevant id third in half the rows: mrr is worse, significantly
    mrr = page.locator("tr", has=page.locator("td", has_text=re.compile(r"^mrr \(0–1\)$")))
    expect(mrr.filter(has_text="worse")).to_have_count(1)
    expect(page.get_by_text("95% family-wise CI")).to_be_visible()
    expect(page.get_by_text(re.compile("corrected together for the"))).to_be_visible()
    expect(page.get_by_text("mrr: the rows that regressed most")).to_be_visible()
    # the worst rows carry the judge's reasoning: statements with verdict marks
    expect(page.get_by_text("Statements of the response").first).to_be_visible()
    expect(page.get_by_text(HOSTILE).first).to_be_visible()  # shown as text
    shoot(page, "report-compared-en")


def test_the_chinese_report_opens_offline(
    page: Page, reports: dict[str, Path], shoot: Shoot
) -> None:
    assert _open_offline(page, reports["zh"]) == []
    expect(page.locator("h1")).to_contain_text("评测报告")
    expect(page.get_by_text("各指标最差的行").first).to_be_visible()
    expect(page.get_by_text("与基线对比")).to_have_count(0)
    shoot(page, "report-zh")


def test_the_chinese_compared_report_opens_offline(
    page: Page, reports: dict[str, Path], shoot: Shoot
) -> None:
    assert _open_offline(page, reports["zh-compared"]) == []
    expect(page.get_by_role("heading", name="与基线对比")).to_be_visible()
    mrr = page.locator("tr", has=page.locator("td", has_text=re.compile(r"^mrr \(0–1\)$")))
    expect(mrr.filter(has_text="更差")).to_have_count(1)
    expect(page.get_by_text("95% 联合置信区间")).to_be_visible()
    expect(page.get_by_text(re.compile("一并校正（Bonferroni）"))).to_be_visible()
    expect(page.get_by_text("mrr：退步最多的行")).to_be_visible()
    expect(page.get_by_text("回答中的陈述").first).to_be_visible()
    assert page.locator("svg[role=img]").count() == len(METRICS.split(","))
    shoot(page, "report-compared-zh")


def test_to_html_from_python_writes_the_same_kind_of_file(tmp_path: Path) -> None:
    rows = [
        {"query": f"q{i}", "retrieved_ids": ["a", "b"], "reference_ids": [["a", "b", "z"][i % 3]]}
        for i in range(9)
    ]
    report = evaluate(rows, "mrr,hit_rate")
    path = report.to_html(tmp_path / "out" / "r.html", worst=3, language="zh")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "Content-Security-Policy" in text
    assert "mrr" in text and "hit_rate" in text and "<script" not in text
    assert text.count("class='card'><div class='label'>行") == 6  # 3 worst rows x 2 metrics


def test_bad_report_requests_name_the_problem(tmp_path: Path) -> None:
    env = {**os.environ, "RAGMETER_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}

    def fails(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "ragmeter", "report", *args],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        return done.stdout + done.stderr

    assert "nope" in fails("nope", "--out", str(tmp_path / "r.html"))
    assert "--language" in fails("nope", "--out", str(tmp_path / "r.html"), "--language", "fr")
    assert "folder" in fails("nope", "--out", str(tmp_path))
