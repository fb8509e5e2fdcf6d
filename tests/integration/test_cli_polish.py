"""What a new user hit with the command line: failures that exited 0, messages that did not
say what to type, and options that were ignored. A real ``ragmeter`` subprocess each time."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragmeter
from ragmeter.errors import DatasetError
from ragmeter.testing import FaultPlan, ScriptedJudgeServer
from tests.integration.helpers import json_lines, run, write_corpus, write_models

ROWS = [
    {"query": "q1", "retrieved_ids": ["a", "b", "c"], "reference_ids": ["b"]},
    {"query": "q2", "retrieved_ids": ["x", "y"], "reference_ids": ["x", "z"]},
]


def _write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def failing_judge() -> Iterator[ScriptedJudgeServer]:
    """A judge that is up but answers every chat request with a 500."""
    with ScriptedJudgeServer(faults=FaultPlan(server_error=1.0)) as server:
        yield server


@pytest.mark.parametrize(("name", "content"), [("empty.csv", ""), ("empty.jsonl", "\n")])
def test_an_empty_dataset_is_an_error_naming_the_file(
    tmp_path: Path, name: str, content: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    result = run("eval", str(path), "-m", "mrr", home=tmp_path / "home")
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {path}: holds no rows; nothing to evaluate"
    assert "rows" not in result.stdout  # no table of 0 rows
    with pytest.raises(DatasetError, match="holds no rows"):
        ragmeter.evaluate(str(path), ["mrr"])
    with pytest.raises(DatasetError, match="<rows>: holds no rows"):
        ragmeter.evaluate([], ["mrr"])


def test_a_metric_without_any_score_makes_the_run_exit_1(
    tmp_path: Path, failing_judge: ScriptedJudgeServer
) -> None:
    rows = [
        {
            "query": f"q{i}",
            "response": "AWEL has three layers.",
            "contexts": ["AWEL layers"],
            "factual": ["AWEL layers"],
        }
        for i in range(2)
    ]
    path = _write_rows(tmp_path / "qa.jsonl", rows)
    out = tmp_path / "r.jsonl"
    result = run(
        "eval", str(path), "-m", "faithfulness,RetrieverHitRateMetric", "--judge-base-url", failing_judge.url,
        "--judge-model", "scripted", "--out", str(out), home=tmp_path / "home",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: no score at all for faithfulness: every one of its 2 results")
    assert "500" in line  # the most common reason
    assert "RetrieverHitRateMetric" not in line  # it scored
    assert "2 result(s) have no score" in result.stdout  # the table and reasons still print
    scores = {(x["metric_name"], x["score"]) for x in json_lines(out.read_text(encoding="utf-8"))}
    assert ("faithfulness", None) in scores and ("RetrieverHitRateMetric", 1.0) in scores


def test_a_run_with_some_scores_still_exits_0(tmp_path: Path) -> None:
    path = _write_rows(
        tmp_path / "qa.jsonl", [*ROWS, {"query": "q3", "retrieved_ids": ["m"], "reference_ids": []}]
    )
    result = run("eval", str(path), "-m", "mrr", home=tmp_path / "home")
    assert result.returncode == 0, result.stderr
    assert "1 result(s) have no score" in result.stdout


def test_flags_show_no_type_in_help() -> None:
    for args in (("eval", "--help"), ("runs", "resume", "--help"), ("--help",)):
        text = run(*args).stdout
        assert "--help" in text and "<bool>" not in text, args
    assert "--no-cache " in run("eval", "--help").stdout


def test_judge_server_on_a_busy_port_is_one_line(tmp_path: Path) -> None:
    with ScriptedJudgeServer() as busy:
        port = busy.url.rsplit(":", 1)[1].split("/")[0]
        result = run("judge-server", "--port", port, "--quiet", home=tmp_path / "home")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line
    assert "Traceback" not in result.stderr


def test_a_judged_metric_without_a_judge_names_the_option(tmp_path: Path) -> None:
    path = _write_rows(tmp_path / "qa.jsonl", [{"query": "q", "response": "r", "contexts": ["c"]}])
    result = run("eval", str(path), "-m", "faithfulness,mrr", home=tmp_path / "home")
    assert result.returncode == 2
    assert "metrics faithfulness need a judge model" in result.stderr
    assert "--judge-model NAME" in result.stderr


def test_model_add_is_safe_to_run_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    args = ("model", "add", "scripted", "--base-url", "http://127.0.0.1:8765/v1")
    first, again = run(*args, home=home), run(*args, home=home)
    assert first.returncode == 0 and "added model 'scripted'" in first.stdout, first.stderr
    assert again.returncode == 0 and "unchanged" in again.stdout, again.stderr
    config = tomllib.loads((home / "ragmeter.toml").read_text(encoding="utf-8"))
    assert config["models"] == {
        "scripted": {"base_url": "http://127.0.0.1:8765/v1", "model": "scripted"}
    }
    other = run("model", "add", "scripted", "--base-url", "http://127.0.0.1:9/v1", home=home)
    assert other.returncode == 2 and "give --replace to overwrite it" in other.stderr
    replaced = run(
        "model", "add", "scripted", "--base-url", "http://127.0.0.1:9/v1", "--replace", home=home
    )
    assert replaced.returncode == 0, replaced.stderr
    run("model", "add", "zhipu", "--base-url", "https://x/v4", "--api-key-env", "ZK", home=home)
    config = tomllib.loads((home / "ragmeter.toml").read_text(encoding="utf-8"))
    assert config["models"]["scripted"]["base_url"] == "http://127.0.0.1:9/v1"
    assert config["models"]["zhipu"] == {
        "base_url": "https://x/v4", "model": "zhipu", "api_key_env": "ZK"
    }  # fmt: skip
    listing = run("model", "list", home=home).stdout
    assert "scripted" in listing and "$ZK" in listing


def test_a_dbgpt_request_body_sets_scene_metrics_and_context(tmp_path: Path) -> None:
    body = {
        "scene_key": "dataset",
        "evaluate_metrics": ["RetrieverMRRMetric", "hit_rate"],
        "context": {"top_k": 1},
        "datasets": ROWS,
    }
    request = tmp_path / "req.json"
    request.write_text(json.dumps(body), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    result = run("eval", str(request), "--out", str(out), home=tmp_path / "home")
    assert result.returncode == 0, result.stderr
    assert "2 rows · top 1" in " ".join(result.stdout.split())
    scores = {(x["row_index"], x["metric_name"]): x["score"] for x in json_lines(out.read_text())}
    assert scores == {  # cut at 1: q1's relevant item is at rank 2, q2's at rank 1
        (0, "RetrieverMRRMetric"): 0.0, (0, "hit_rate"): 0.0,
        (1, "RetrieverMRRMetric"): 1.0, (1, "hit_rate"): 1.0,
    }  # fmt: skip
    wins = run("eval", str(request), "-m", "mrr", "--top-k", "2", home=tmp_path / "home")
    assert wins.returncode == 0 and "2 rows · top 2" in " ".join(
        wins.stdout.split()
    )  # options given win
    assert "RetrieverMRRMetric" not in wins.stdout
    request.write_text(json.dumps({**body, "context": {"top_k": "many"}}), encoding="utf-8")
    bad = run("eval", str(request), home=tmp_path / "home")
    assert bad.returncode == 2 and f"{request}: context.top_k must be an integer" in bad.stderr


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


@pytest.fixture(scope="module")
def kb_home(tmp_path_factory: pytest.TempPathFactory, judge: ScriptedJudgeServer) -> Path:
    root = tmp_path_factory.mktemp("body")
    home = root / "home"
    write_models(home, judge.url)
    assert run("space", "create", "kb", "--embedder", "hashed", home=home).returncode == 0
    assert run("space", "add", "kb", str(write_corpus(root / "corpus")), home=home).returncode == 0
    return home


def test_a_dbgpt_body_for_the_recall_and_app_scenes(kb_home: Path) -> None:
    rows = [{"query": "Which layers make up AWEL?", "doc_name": "guide/awel.md"}]
    recall = kb_home.parent / "recall.json"
    recall.write_text(
        json.dumps(
            {
                "scene_key": "recall", "scene_value": "kb", "context": {"top_k": 2},
                "evaluate_metrics": ["RetrieverHitRateMetric"], "datasets": rows,
            }
        ),
        encoding="utf-8",
    )  # fmt: skip
    out = kb_home.parent / "recall.jsonl"
    result = run("eval", str(recall), "--out", str(out), home=kb_home)
    assert result.returncode == 0, result.stderr
    assert "space 'kb' · top 2" in " ".join(result.stdout.split())  # the title may wrap
    (line,) = json_lines(out.read_text(encoding="utf-8"))
    assert len(line["prediction"]) == 2 and line["retriever"] == "vector"
    assert (
        run("app", "add", "bot", "--space", "kb", "--model", "scripted", home=kb_home).returncode
        == 0
    )
    app = kb_home.parent / "app.json"
    app.write_text(
        json.dumps(
            {
                "scene_key": "app", "scene_value": "bot", "context": {"model": "scripted"},
                "evaluate_metrics": ["AnswerRelevancyMetric"], "datasets": rows,
            }
        ),
        encoding="utf-8",
    )  # fmt: skip
    judged = run("eval", str(app), "--out", str(out), home=kb_home)
    assert judged.returncode == 0, judged.stderr
    words = " ".join(judged.stdout.split())  # the title may wrap, as above
    assert "app 'bot'" in words and "judge:" in words
    (line,) = json_lines(out.read_text(encoding="utf-8"))
    assert line["app"] == "bot" and line["score"] is not None


def test_re_adding_an_app_names_replace(kb_home: Path) -> None:
    args = ("app", "add", "twice", "--space", "kb", "--model", "scripted")
    assert run(*args, home=kb_home).returncode == 0
    again = run(*args, home=kb_home)
    assert again.returncode == 2
    assert "app 'twice' already exists; choose another name, or give --replace" in again.stderr
    replaced = run(*args, "--top-k", "3", "--replace", home=kb_home)
    assert replaced.returncode == 0, replaced.stderr
    shown = json.loads(run("app", "show", "twice", home=kb_home).stdout)
    assert shown["top_k"] == 3
    prompt = kb_home.parent / "p.txt"
    prompt.write_text("{query} {context} {answer}", encoding="utf-8")
    assert run("prompt", "add", "p", "--file", str(prompt), home=kb_home).returncode == 0
    twice = run("prompt", "add", "p", "--file", str(prompt), home=kb_home)
    assert twice.returncode == 2
    assert "prompt 'p' already exists; give --replace to overwrite it" in twice.stderr
