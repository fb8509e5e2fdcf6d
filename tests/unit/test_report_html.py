"""The HTML report's page (``reports/html.py``) from in-memory reports: every value escaped,
nothing that points outside the file, the worst rows (lowest scores, then nulls) with the
judge's reasoning and verdict marks, "not recorded" for judged results without it, a size
bounded for hostile texts, English and Chinese, and clear errors for bad options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ragmeter import ConfigError, EvaluationReport, ResultRecord, evaluate
from ragmeter.reports.html import ITEMS_SHOWN, MAX_WORST, render_html
from ragmeter.reports.html_text import TEXT, Language
from ragmeter.wire.compare import ComparisonNote, MetricComparison

HOSTILE = '<script>alert(1)</script><img src="https://evil.example/x.png" onerror="x()">'


def _record(index: int, metric: str, score: float | None, **extra: Any) -> ResultRecord:
    values: dict[str, Any] = {
        "row_index": index,
        "metric_name": metric,
        "score": score,
        "passing": None,
        "feedback": None,
        "error": None if score is not None else "the judge timed out",
        "prediction": None,
        "contexts": None,
        "prediction_cost": 0,
        "query": f"question {index}",
        "raw_dataset": {"query": f"question {index}", "response": f"answer {index}"},
        "error_kind": None if score is not None else "upstream",
    }
    values.update(extra)
    return ResultRecord(**values)


def _report(records: list[ResultRecord], metrics: list[str]) -> EvaluationReport:
    report = EvaluationReport(records, metrics, len(records) // len(metrics), 1.5, None)
    report.run_id = "run-1"
    return report


def _cards(page: str) -> list[str]:
    """The row numbers of the row cards, in page order."""
    return re.findall(r"<div class='card'><div class='label'>Row (\d+) ", page)


def _points_outside(page: str) -> list[str]:
    """Every attribute or CSS construct that could make the browser fetch something."""
    tags = re.findall(r"<[a-zA-Z][^>]*\s(?:src|href|action|srcset|poster|data)\s*=[^>]*>", page)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    css = [s for s in styles if re.search(r"url\(|@import", s)]
    urls = re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", page.replace("&#x27;", "'"))
    return tags + css + [u for u in urls if "evil.example" not in u]


def test_every_value_is_escaped_and_nothing_points_outside_the_file(tmp_path: Path) -> None:
    details = {
        "groups": [
            {
                "kind": "response_statements",
                "items": [{"text": HOSTILE, "verdict": False, "reason": HOSTILE, "value": None}],
            },
            {"kind": HOSTILE, "items": [{"text": "x", "verdict": None}]},
        ],
        "values": {HOSTILE: 1.0},
    }
    record = _record(
        0,
        "faithfulness",
        0.25,
        query=HOSTILE,
        feedback=HOSTILE,
        raw_dataset={"query": HOSTILE, "response": HOSTILE, "reference": HOSTILE},
        details=details,
    )
    failed = _record(1, "faithfulness", None, error=HOSTILE, error_kind=HOSTILE)
    report = _report([record, failed], ["faithfulness"])
    report.target = HOSTILE
    page = report.to_html(tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<img" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 8
    assert _points_outside(page) == []
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def test_the_worst_rows_are_the_lowest_scores_then_the_nulls() -> None:
    scores = [0.9, None, 0.1, 0.5, 0.1, None, 0.7]
    records = [_record(i, "m", s) for i, s in enumerate(scores)]
    report = _report(records, ["m"])
    assert [r.row_index for r in report.worst("m", 10)] == [2, 4, 3, 6, 0, 1, 5]
    page = render_html(report, title="t", worst=4)
    assert _cards(page) == ["2", "4", "3", "6"]
    assert _cards(render_html(report, title="t", worst=0)) == []


def test_an_evaluated_report_lists_its_worst_rows_from_its_columns(tmp_path: Path) -> None:
    rows = [
        {"query": f"q{i}", "retrieved_ids": ["a", "b", "c"], "reference_ids": [["c", "a"][i % 2]]}
        for i in range(30)
    ]
    rows.append({"query": "no reference", "retrieved_ids": ["a"], "reference_ids": []})
    report = evaluate(rows, "mrr")
    worst = report.worst("mrr", 16)
    assert [r.score for r in worst[:15]] == pytest.approx([1 / 3] * 15)
    assert [r.row_index for r in worst[:15]] == list(range(0, 30, 2))
    assert worst[15].score == pytest.approx(1.0)
    assert report.worst("mrr", 40)[-1].score is None  # the null comes last
    page = report.to_html(tmp_path / "nested" / "r.html", worst=16).read_text(encoding="utf-8")
    assert _cards(page)[:3] == ["0", "2", "4"]
    assert "1 × <b>input</b>" in page  # the null reason, counted


def test_reasoning_shows_verdict_marks_and_not_recorded_for_old_judged_results() -> None:
    details = {
        "groups": [
            {
                "kind": "response_statements",
                "items": [
                    {"text": "Paris is in France.", "verdict": True, "reason": "context 2"},
                    {"text": "It has 90 million people.", "verdict": False, "reason": None},
                ],
            },
            {"kind": "questions", "items": [{"text": "Where is Paris?", "value": 0.91}]},
        ],
        "values": {"tp": 1, "f1": 0.6667},
    }
    judged = {"requests": 1.0, "cached": 0.0}
    records = [
        _record(0, "faithfulness", 0.5, details=details, cost=judged),
        _record(1, "faithfulness", 0.6, cost={"requests": 0.0, "cached": 1.0}),  # old, cached
        _record(2, "faithfulness", 0.7),  # no judge asked: nothing to say
    ]
    page = render_html(_report(records, ["faithfulness"]), title="t")
    en = TEXT["en"]
    assert en["kind.response_statements"] in page and en["kind.questions"] in page
    assert "<span class='ok'>✓</span> Paris is in France." in page
    assert "<span class='bad'>✗</span> It has 90 million people." in page
    assert "<li>Where is Paris? <span class='muted'>(0.910)</span>" in page
    assert "f1 = 0.667" in page
    assert page.count(en["notRecorded"]) == 1


@pytest.mark.parametrize(("char", "limit"), [("a", 3_000_000), ("<", 8_000_000)])
def test_a_hostile_response_cannot_make_the_file_huge(char: str, limit: int) -> None:
    """6 metrics x 20 rows whose texts and reasoning are as long as the store keeps them:
    a few MB of plain text; escaping makes ``<`` four characters, and no more than that."""
    big = char * 1000
    item = {"text": big, "verdict": True, "reason": big, "value": None}
    details = {"groups": [{"kind": "response_statements", "items": [item] * 200}] * 2}
    metrics = [f"m{k}" for k in range(6)]
    raw = {"query": big * 50, "response": big * 50, "reference": big * 50}
    records = [
        _record(i, m, i / 100, details=details, raw_dataset=raw, query=big * 50, feedback=big)
        for i in range(100)
        for m in metrics
    ]
    page = render_html(_report(records, metrics), title="t", worst=20)
    assert len(page.encode()) < limit
    more = TEXT["en"]["moreItems"].format(n=200 - ITEMS_SHOWN)
    assert page.count(more) == 6 * 20 * 2


def test_a_comparison_shows_both_means_the_difference_and_the_verdict() -> None:
    report = _report([_record(0, "mrr", 0.5), _record(0, "hit_rate", 1.0)], ["mrr", "hit_rate"])
    common = {"better": 0, "worse": 3, "same": 1, "paired": 4}
    compared = [
        MetricComparison(
            metric_name="mrr",
            base_mean=0.8,
            other_mean=0.5,
            delta=-0.3,
            ci95_low=-0.45,
            ci95_high=-0.15,
            p_value=0.004,
            p_adjusted=0.008,
            verdict="worse",
            family=2,
            ci_level=0.975,
            scale="0–1",
            **common,
        ),
        MetricComparison(
            metric_name="hit_rate",
            base_mean=None,
            other_mean=1.0,
            delta=None,
            ci95_low=None,
            ci95_high=None,
            note="no row id is scored in both runs",
            **{**common, "paired": 0},
        ),
    ]
    page = render_html(report, title="t", comparison=compared, regressions={"mrr": []})
    assert "<td class='num'>0.8000</td><td class='num'>0.5000</td>" in page
    assert "-0.4500 – -0.1500" in page and "0.0080" in page
    assert "<span class='badge worse'>▼ worse</span>" in page
    assert "no row id is scored in both runs" in page  # no verdict without pairs: the note
    assert TEXT["en"]["noRegression"] in page
    # the header names the correction, and the note says what it means
    assert "<th class='num'>95% family-wise CI</th>" in page
    assert "<th class='num'>p (Bonferroni)</th>" in page
    assert "corrected together for the 2 metrics compared (Bonferroni)" in page
    assert "each interval is made at 97.5%" in page
    assert "mrr <span class='muted'>(0–1)</span>" in page
    # a note with its code is said in the report's language
    unpaired = compared[1].model_copy(
        update={
            "notes": [
                ComparisonNote(code="unpaired", values={"by": "id", "scored_a": 0, "scored_b": 4})
            ]
        }
    )
    page = render_html(report, title="t", comparison=[compared[0], unpaired], language="zh")
    assert "没有两次运行都打了分的行（基线 0 行有分，候选 4 行有分；配对依据：行 id）" in page


@pytest.mark.parametrize("language", ["en", "zh"])
def test_no_evidence_equivalence_and_a_flat_interval_read_right(language: Language) -> None:
    report = _report([_record(0, "mrr", 0.5)], ["mrr"])
    base = {"base_mean": 0.5, "other_mean": 0.5, "delta": 0.0, "ci95_low": 0.0}
    common = {"better": 0, "worse": 0, "same": 24, "paired": 24, "family": 2, "ci_level": 0.975}
    compared = [
        MetricComparison(
            metric_name="hit_rate",
            ci95_high=0.0,
            p_value=1.0,
            p_adjusted=1.0,
            verdict="no_evidence",
            ci_note="interval not informative: all 24 values equal",
            small_sample=True,
            **base,
            **common,
        ),
        MetricComparison(
            metric_name="mrr",
            ci95_high=0.01,
            p_value=0.9,
            p_adjusted=1.0,
            verdict="equivalent",
            margin=0.02,
            **base,
            **common,
        ),
    ]
    page = render_html(report, title="t", comparison=compared, language=language)
    text = TEXT[language]
    assert text["notInformative"].format(n=24) in page
    # the summary's one-row interval too, with the reason under the table
    assert text["notInformative"].format(n=1) in page and text["notInformativeNote"] in page
    assert "0.0000 – 0.0000" not in page  # the flat interval is not shown as one
    assert f"{text['no_evidence']}</span>" in page
    assert f"{text['equivalent'].format(margin='0.02')}</span>" in page
    assert ">same<" not in page and "无显著差异" not in page


def test_chinese_text_and_bad_options(tmp_path: Path) -> None:
    report = _report([_record(0, "mrr", 0.5)], ["mrr"])
    page = report.to_html(tmp_path / "zh.html", language="zh").read_text(encoding="utf-8")
    assert "<html lang='zh'>" in page and "ragmeter 评测报告" in page and "各指标最差的行" in page
    assert "Summary" not in page
    with pytest.raises(ConfigError, match="language: 'fr'"):
        report.to_html(tmp_path / "fr.html", language="fr")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=f"worst: {MAX_WORST + 1}"):
        report.to_html(tmp_path / "w.html", worst=MAX_WORST + 1)
    with pytest.raises(ConfigError, match="it is a folder"):
        report.to_html(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match=r"cannot write the report to .*a-file/r\.html"):
        report.to_html(blocker / "r.html")
