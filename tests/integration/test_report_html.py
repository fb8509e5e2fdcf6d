"""The HTML report of stored runs: ``ragmeter report RUN [--compare BASE] --out FILE`` and
``ragmeter.load_run(RUN).to_html`` write the same file; a known regression shows as
significant with the rows that regressed most; the worst rows read in SQL are those the
in-memory report picks; a judged run shows the judge's reasoning from the store; an unknown
run and an unwritable --out are errors naming them (exit 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.reports.html_text import TEXT
from tests.integration.helpers import run, write_models

METRICS = "mrr,hit_rate"


def _rows(worse: bool) -> list[dict[str, Any]]:
    """40 rows with ids; in the candidate the relevant id drops from rank 1 to rank 3 in
    every other row (mrr falls, hit_rate stays)."""
    rows = []
    for i in range(40):
        ids = [f"d{i}-{k}" for k in range(3)]
        rank = 2 if worse and i % 2 else 0
        rows.append(
            {"id": f"q{i}", "query": f"Where is part {i}?", "response": f"Part {i} is here.",
             "retrieved_ids": ids, "reference_ids": [ids[rank]]}
        )  # fmt: skip
    rows.append({"id": "q-none", "query": "No reference", "retrieved_ids": ["x"]})
    rows[-1]["reference_ids"] = []
    return rows


def _stored(home: Path, name: str, rows: list[dict[str, Any]], *args: str) -> str:
    data = home / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = run("eval", str(data), "-m", METRICS, *args, home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"run ([0-9a-f]{32}) stored", done.stdout)
    assert found is not None, done.stdout
    return found.group(1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    home = tmp_path_factory.mktemp("report-runs")
    return home, _stored(home, "base", _rows(False)), _stored(home, "candidate", _rows(True))


def _cards(page: str, metric: str) -> list[str]:
    """Row numbers of one metric's worst-row cards."""
    section = page.split(f"<h3>{metric}</h3><div class='card'>", 1)[1].split("<h3>", 1)[0]
    return re.findall(r"<div class='label'>Row (\d+) ", "<div class='card'>" + section)


def test_the_command_and_python_write_the_same_compared_report(
    runs: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, base, candidate = runs
    out = home / "out" / "compared.html"
    done = run("report", candidate, "--compare", base, "--out", str(out), home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "report: " in done.stdout and "compared.html" in done.stdout
    page = out.read_text(encoding="utf-8")
    # the summary: the run, its dataset, both ids, each metric with its mean and nulls
    assert candidate in page and base in page and "candidate.jsonl" in page
    named = "<td>{} <span class='muted'>(0–1)</span></td>"  # each metric with its scale
    assert named.format("mrr") in page and "1 × <b>input</b>" in page
    # mrr: 20 of 40 rows drop from 1 to 1/3: worse, significantly; hit_rate: no difference
    compared = page.split(TEXT["en"]["comparison"])[1]
    mrr = re.search(f"<tr>{re.escape(named.format('mrr'))}.*?</tr>", compared)
    assert mrr is not None and "badge worse" in mrr.group(0) and "-0.3333" in mrr.group(0)
    hit = re.search(f"<tr>{re.escape(named.format('hit_rate'))}.*?</tr>", compared)
    assert hit is not None and "badge no_evidence" in hit.group(0)
    assert "no evidence of a difference" in hit.group(0) and ">same<" not in compared
    assert "95% family-wise CI" in compared and "p (Bonferroni)" in compared
    assert "corrected together for the 2 metrics compared (Bonferroni)" in compared
    regressed = page.split("mrr: the rows that regressed most")[1].split("</table>")[0]
    assert regressed.count("<tr>") == 21  # the header and the 20 rows, each -0.6667
    assert regressed.count("-0.6667") == 20
    assert "hit_rate: the rows that regressed most" in page and "No row got worse." in page
    # the same file from Python
    monkeypatch.setenv("RAGMETER_HOME", str(home))
    again = ragmeter.load_run(candidate).to_html(home / "again.html", compare=base)
    assert again.read_text(encoding="utf-8") == page


def test_the_stored_worst_rows_are_the_ones_the_report_in_memory_picks(
    runs: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home, _base, candidate = runs
    monkeypatch.setenv("RAGMETER_HOME", str(home))
    stored = ragmeter.load_run(candidate)
    memory = ragmeter.evaluate(_rows(True), METRICS)
    for metric in METRICS.split(","):
        expected = [(r.row_index, r.score) for r in memory.worst(metric, 25)]
        assert [(r.row_index, r.score) for r in stored.worst(metric, 25)] == expected
        assert stored.scores(metric) == memory.scores(metric)
        assert stored.null_reasons(metric, 5) == memory.null_reasons(metric, 5)
    whole = stored.report()  # every result, loaded
    assert whole.run_id == candidate and whole.scores("mrr") == memory.scores("mrr")
    page = stored.to_html(tmp_path / "r.html", worst=41).read_text(encoding="utf-8")
    assert _cards(page, "mrr")[:3] == ["1", "3", "5"]  # 1/3 first, in row order
    assert _cards(page, "hit_rate")[-1] == "40"  # all 41 shown: the null comes last


def test_a_judged_run_shows_the_reasoning_kept_in_the_store(
    home: Path, judge_server: Any, tmp_path: Path
) -> None:
    write_models(home, judge_server.url)
    rows = synthetic_rows(6)
    report = ragmeter.evaluate(
        rows, "faithfulness,answer_relevancy", judge="scripted", embedder="hashed", store=True
    )
    assert report.run_id is not None
    in_memory = report.to_html(tmp_path / "memory.html").read_text(encoding="utf-8")
    stored = ragmeter.load_run(report.run_id).to_html(tmp_path / "stored.html", language="zh")
    page = stored.read_text(encoding="utf-8")
    zh, en = TEXT["zh"], TEXT["en"]
    assert zh["kind.response_statements"] in page and zh["kind.questions"] in page
    assert en["kind.response_statements"] in in_memory and report.run_id in in_memory
    for text in (in_memory, page):
        assert "<span class='ok'>✓</span>" in text and "<span class='bad'>✗</span>" in text
        assert text.count("class='card'><div class='label'>") == 12  # 6 rows x 2 metrics
    assert en["notRecorded"] not in in_memory and zh["notRecorded"] not in page


def test_an_unknown_run_and_an_unwritable_out_are_named(runs: tuple[Path, str, str]) -> None:
    home, base, _candidate = runs
    target = str(home / "x.html")
    done = run("report", "no-such-run", "--out", target, home=home)
    assert done.returncode == 2 and "no run 'no-such-run'" in done.stderr
    done = run("report", base, "--compare", "no-such-base", "--out", target, home=home)
    assert done.returncode == 2 and "no run 'no-such-base'" in done.stderr
    blocker = home / "a-file"
    blocker.write_text("x", encoding="utf-8")
    done = run("report", base, "--out", str(blocker / "r.html"), home=home)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot write the report to" in done.stderr and "a-file/r.html" in done.stderr
    done = run("report", base, "--out", target, "--language", "fr", home=home)
    assert done.returncode == 2 and "--language 'fr'" in done.stderr
    assert not (home / "x.html").exists()
