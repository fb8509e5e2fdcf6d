"""Judge cards from the command line on SQLite and PostgreSQL: a card over each public
suite with the scripted judge (numbers meaningless, flow real), kept and read back, listed
by the API, shown beside a run's scores by the gate and the HTML report, and required by
``gate --require-card``; bad input is exit code 2 naming it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.client import Client
from ragmeter.runs.storage.cards import CardStore
from ragmeter.store.db import open_store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import run
from tests.integration.judge_suites import judge_suites
from tests.integration.service import ServiceProcess, data

pytestmark = pytest.mark.both_stores

ROWS = [
    {"query": "What is the capital of France?", "response": "Paris.",
     "contexts": ["Paris is the capital of France."]},
    {"query": "What colour is the sky?", "response": "Blue.", "contexts": ["The sky is blue."]},
]  # fmt: skip


@pytest.fixture
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


def _card(home: Path, judge: ScriptedJudgeServer, *args: str) -> dict[str, Any]:
    done = run(
        "judge", "card", "--judge-model", "scripted", "--judge-base-url", judge.url,
        "--suites-dir", str(judge_suites()), "--json", *args, home=home,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize(
    ("suite", "metric", "language", "groups"),
    [
        ("ragtruth", "faithfulness", "en", {"task", "model"}),
        ("uhgeval", "faithfulness", "zh", {"task", "model"}),
        ("evalsbench", "answer_correctness", "en", set()),
    ],
)
def test_a_card_over_each_judged_suite(
    store_home: Path,
    judge: ScriptedJudgeServer,
    suite: str,
    metric: str,
    language: str,
    groups: set[str],
) -> None:
    stored = _card(store_home, judge, "--suite", suite, "--limit", "24")
    card = stored["card"]
    assert stored["judge_model"] == "scripted" and stored["metric"] == metric
    assert stored["suite"] == suite and len(stored["suite_hash"]) == 64
    assert card["suite"]["rows"] == 24 and card["judge"]["scripted"]
    assert card["cost"]["requests"] > 0 and card["latency"]["seconds"] > 0
    overall = card["agreement"]["all"]
    assert overall["n"] + card["nulls"]["n"] == 24
    assert [s["name"] for s in overall["statistics"]] == [
        "cohen_kappa", "balanced_accuracy", "f1", "accuracy",
    ]  # fmt: skip
    assert set(card["agreement"]["language"]) == {language}
    assert groups <= set(card["agreement"])
    back = CardStore(open_store()).get(stored["id"])
    assert back.card == card and back.prompt_code == "built-in" and back.prompt_hash


def test_a_card_from_a_file_runs_no_judge_and_prints(store_home: Path) -> None:
    done = run(
        "judge", "card", "--judge-model", "umbrela2", "--suite", "trec_rag", "--limit", "400",
        home=store_home, env={"RAGMETER_JUDGE_SUITES": str(judge_suites())},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "labels from file, no judge run" in done.stdout
    assert "weighted κ" in done.stdout and "binary >=2" in done.stdout
    (card,) = CardStore(open_store()).list(judge_model="umbrela2")
    assert card.card["suite"]["rows"] == 400 and card.card["cost"] == {}


def test_the_gate_and_report_show_and_require_the_card(
    store_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    done = run(
        "eval", str(rows), "-m", "faithfulness", "--judge-model", "scripted",
        "--judge-base-url", judge.url, "--name", "checked", home=store_home,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = re.search(r"run ([0-9a-f]{32}) stored", done.stdout)
    assert found is not None, done.stdout
    missing = run("gate", "checked", "--require-card", "faithfulness:kappa>=0", home=store_home)
    assert missing.returncode == 1
    assert "no judge card of judge 'scripted' on faithfulness" in missing.stdout
    kappa = _card(store_home, judge, "--suite", "ragtruth", "--limit", "30")["card"]
    value = next(s for s in kappa["agreement"]["all"]["statistics"] if s["name"] == "cohen_kappa")
    below, above = value["value"] - 0.01, value["value"] + 0.01
    passed = run("gate", "checked", "--require-card", f"faithfulness:kappa>={below}",
                 "-r", "faithfulness.mean >= 0", home=store_home)  # fmt: skip
    assert passed.returncode == 0, passed.stdout
    assert "faithfulness · judge card: κ" in passed.stdout and "n 30, ragtruth" in passed.stdout
    failed = run("gate", "checked", "--require-card", f"faithfulness:kappa>={above}",
                 home=store_home)  # fmt: skip
    assert failed.returncode == 1
    assert "gate failed: 1 judge card requirement(s)" in failed.stdout
    bad = run("gate", "checked", "--require-card", "faithfulness:kapa>=0.6", home=store_home)
    assert bad.returncode == 2 and "unknown statistic 'kapa'" in bad.stderr
    page = tmp_path / "report.html"
    shown = run("report", found.group(1), "-o", str(page), home=store_home)
    assert shown.returncode == 0, shown.stderr
    assert "Judge card · faithfulness" in page.read_text(encoding="utf-8")
    with ServiceProcess(store_home, keys=None) as process:
        with process.client(None) as http:
            listed = data(http.get("/judge/cards", params={"metric": "faithfulness"}))
        with Client(api_base=process.api) as client:  # the Python client reads them too
            cards = client.judge_cards(judge_model="scripted", metric="faithfulness")
            assert client.judge_cards(metric="answer_correctness") == []
    assert [c["suite"] for c in listed] == ["ragtruth"]
    assert listed[0]["headline"].startswith("judge card: κ")
    assert [(c.suite, c.headline) for c in cards] == [("ragtruth", listed[0]["headline"])]
    assert cards[0].card["agreement"]["all"]["n"] > 0


def test_bad_card_input_is_exit_2(store_home: Path, tmp_path: Path) -> None:
    nowhere = run("judge", "card", "--judge-model", "m", "--suite", "ragtruth",
                  "--suites-dir", str(tmp_path / "none"), home=store_home)  # fmt: skip
    assert nowhere.returncode == 2 and "judge suites folder not found" in nowhere.stderr
    bad = tmp_path / "ours.jsonl"
    bad.write_text('{"query": "q", "response": "a", "human": 1}\n{"query": "q"}\n')
    malformed = run("judge", "card", "--judge-model", "m", "--suite", str(bad), home=store_home)
    assert malformed.returncode == 2
    assert f"{bad} line 2 field 'human'" in malformed.stderr.replace("\n", "")
    bad.write_text('{"query": "q", "response": "a", "human": 1}\n')
    lacking = run("judge", "card", "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9",
                  "--suite", str(bad), home=store_home)  # fmt: skip
    assert lacking.returncode == 2
    assert "suite ours (row 0) field 'retrieved_contexts'" in lacking.stderr.replace("\n", "")
