"""Runs a team can tell apart, as a user makes them with the command line: named, tagged and
labelled runs with what made them; a dataset kept once per content, a changed file becoming
its next version; renaming, tagging, archiving and removing; a killed command's run shown as
interrupted, never running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import RAGMETER, run, write_corpus, write_models

pytestmark = pytest.mark.both_stores


def _json(*args: str, home: Path, cwd: Path | None = None) -> Any:
    done = run(*args, "--json", home=home, cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _rows(extra: str = "", *, retrieved: bool = True) -> str:
    rows: list[dict[str, Any]] = [
        {"id": "q1", "query": "How deep is AWEL's operator layer?", "reference_ids": ["x"]},
        {"id": "q2", "query": "Which water suits green tea?", "reference_ids": ["y"]},
        {"id": "q3", "query": "What does a compost heap need?" + extra, "reference_ids": ["z"]},
    ]
    if retrieved:  # the rows carry their own ranking (no space searched)
        for row, ranking in zip(rows, (["x", "w"], ["w", "y"], ["w"]), strict=True):
            row["retrieved_ids"] = ranking
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def space_home(tmp_path: Path, judge_server: ScriptedJudgeServer) -> Path:
    """A home with the scripted models and a space 'docs' of a small corpus (hashed
    embedder: no model to load)."""
    home = tmp_path / "home"
    write_models(home, judge_server.url)
    assert run("space", "create", "docs", "--embedder", "hashed", home=home).returncode == 0
    added = run("space", "add", "docs", str(write_corpus(tmp_path / "corpus")), home=home)
    assert added.returncode == 0, added.stderr
    return home


def test_three_retrievers_in_one_command_are_three_named_labelled_runs(
    space_home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "work" / "questions.jsonl"
    data.parent.mkdir()
    data.write_text(_rows(retrieved=False), encoding="utf-8")
    args = ["eval", str(data), "-m", "hit_rate,mrr", "--space", "docs"]
    done = run(*args, "--retriever", "vector,bm25,hybrid", "--tag", "sweep", "--note", "k=5",
               home=space_home)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for retriever in ("vector", "bm25", "hybrid"):
        assert f"stored as 'questions-{retriever}': {retriever}@5 on docs" in done.stdout
    listed = _json("runs", "list", "--tag", "sweep", home=space_home)
    assert sorted((r["name"], r["label"]) for r in listed) == [
        ("questions-bm25", "bm25@5 on docs"),
        ("questions-hybrid", "hybrid@5 on docs"),
        ("questions-vector", "vector@5 on docs"),
    ]
    assert {r["dataset"]["name"] for r in listed} == {"questions"}
    assert {r["dataset"]["version"] for r in listed} == {1}  # one dataset for all three
    shown = _json("runs", "show", "questions-hybrid", home=space_home)
    lineage = shown["lineage"]
    assert shown["tags"] == ["sweep"] and shown["note"] == "k=5"
    assert lineage["target"]["retriever"] == "hybrid" and lineage["target"]["top_k"] == 5
    space = lineage["target"]["space"]
    assert space["name"] == "docs" and space["embedder"] == "hashed" and space["revision"] >= 1
    assert lineage["dataset"]["source"] == "questions.jsonl"  # the file's name, no folder
    assert lineage["metrics"] == ["hit_rate", "mrr"] and lineage["ragmeter"]
    assert str(tmp_path) not in json.dumps(shown)  # no folder of this machine anywhere
    table = run("runs", "list", home=space_home)
    assert "questions-hybrid" in table.stdout and "hybrid@5 on docs" in table.stdout
    assert "questions@1" in table.stdout
    shown_table = run("runs", "show", "questions-vector", home=space_home)  # what made it
    assert "target.retriever" in shown_table.stdout and "vector" in shown_table.stdout


def test_the_same_file_reuses_its_dataset_and_an_edited_one_is_version_2(
    home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "qa.jsonl"
    data.write_text(_rows(), encoding="utf-8")
    for _ in range(2):
        assert run("eval", str(data), "-m", "hit_rate", home=home).returncode == 0
    (dataset,) = _json("datasets", "list", home=home)
    assert (dataset["name"], dataset["version"], dataset["versions"], dataset["runs"]) == (
        "qa", 1, 1, 2,
    )  # fmt: skip
    data.write_text(_rows(extra=" (edited)"), encoding="utf-8")
    assert (
        run("eval", str(data), "-m", "hit_rate", "--name", "after-edit", home=home).returncode == 0
    )
    versions = _json("datasets", "show", "qa", home=home)
    assert [(v["version"], v["runs"], v["rows"]) for v in versions] == [(2, 1, 3), (1, 2, 3)]
    assert versions[0]["hash"] != versions[1]["hash"]
    assert [r["name"] for r in versions[0]["run_ids"]] == ["after-edit"]
    # the file written back as it was: version 1's rows, no third version
    data.write_text(_rows(), encoding="utf-8")
    assert run("eval", str(data), "-m", "hit_rate", home=home).returncode == 0
    assert [v["version"] for v in _json("datasets", "show", "qa", home=home)] == [2, 1]
    newest = _json("runs", "list", "--limit", "1", home=home)[0]
    assert newest["dataset"]["version"] == 1
    # --dataset-name keeps the rows under another name, the filter finds its runs
    assert (
        run("eval", str(data), "-m", "mrr", "--dataset-name", "golden", home=home).returncode == 0
    )
    (golden_run,) = _json("runs", "list", "--dataset", "golden@1", home=home)
    assert golden_run["dataset"]["name"] == "golden"


def test_the_same_file_again_is_found_by_its_bytes_without_hashing_its_rows(
    home: Path, tmp_path: Path
) -> None:
    from sqlalchemy import update

    from ragmeter.config import load_settings
    from ragmeter.store.db import Store
    from ragmeter.store.models import DatasetRecord

    data = tmp_path / "qa.jsonl"
    data.write_text(_rows(), encoding="utf-8")
    assert run("eval", str(data), "-m", "hit_rate", home=home).returncode == 0
    store = Store(load_settings().store_url())
    with store.session() as session:  # a hash no rows have: only the file's key finds v1
        session.execute(update(DatasetRecord).values(content_hash="0" * 64))
        session.commit()
    store.close()
    assert run("eval", str(data), "-m", "mrr", home=home).returncode == 0
    versions = _json("datasets", "show", "qa", home=home)
    assert [(v["version"], v["runs"]) for v in versions] == [(1, 2)]
    # the same rows written otherwise: another file key, and the rows' hash is looked for
    data.write_text(_rows().replace('", "', '",  "'), encoding="utf-8")
    assert run("eval", str(data), "-m", "mrr", home=home).returncode == 0
    versions = _json("datasets", "show", "qa", home=home)
    assert [(v["version"], v["runs"]) for v in versions] == [(2, 1), (1, 2)]
    assert versions[0]["hash"] != "0" * 12  # version 2's hash is its rows'


def test_runs_are_renamed_tagged_archived_and_removed(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "qa.jsonl"
    data.write_text(_rows(), encoding="utf-8")
    assert run("eval", str(data), "-m", "hit_rate", "--name", "first", home=home).returncode == 0
    assert run("eval", str(data), "-m", "mrr", "--name", "second", home=home).returncode == 0
    first = _json("runs", "show", "first", home=home)["run_id"]
    assert run("runs", "rename", first[:8], "baseline", home=home).returncode == 0
    assert run("runs", "tag", "baseline", "gold", "v1", home=home).returncode == 0
    assert run("runs", "tag", "baseline", "v1", "--remove", home=home).returncode == 0
    assert run("runs", "note", "baseline", "the one to beat", home=home).returncode == 0
    shown = _json("runs", "show", first, home=home)
    assert (shown["name"], shown["tags"], shown["note"]) == (
        "baseline",
        ["gold"],
        "the one to beat",
    )
    assert [r["id"] for r in _json("runs", "list", "--tag", "gold", home=home)] == [first]
    assert run("runs", "archive", "baseline", home=home).returncode == 0
    assert [r["name"] for r in _json("runs", "list", home=home)] == ["second"]
    assert [r["name"] for r in _json("runs", "list", "--archived", home=home)] == ["baseline"]
    assert run("runs", "unarchive", "baseline", home=home).returncode == 0
    removed = run("runs", "rm", "second", "baseline", home=home)
    assert removed.returncode == 0 and removed.stdout.count("deleted") == 2
    assert _json("runs", "list", home=home) == []
    # bad input: exit 2, naming what is wrong; nothing is removed for an unknown run
    assert run("eval", str(data), "-m", "mrr", "--name", "third", home=home).returncode == 0
    unknown = run("runs", "rm", "third", "no-such-run", home=home)
    assert unknown.returncode == 2 and "no run 'no-such-run'" in unknown.stderr
    assert [r["name"] for r in _json("runs", "list", home=home)] == ["third"]
    bad = run("runs", "tag", "third", "has space", home=home)
    assert bad.returncode == 2 and "invalid tag 'has space'" in bad.stderr
    many = run("runs", "tag", "third", *[f"t{i}" for i in range(21)], home=home)
    assert many.returncode == 2 and "at most 20 tags" in many.stderr
    # a dataset removed: its name is freed, the run that used it keeps its rows
    assert run("datasets", "rm", "qa", home=home).returncode == 0
    assert _json("datasets", "list", home=home) == []
    assert _json("runs", "show", "third", home=home)["dataset"]["name"] == "qa"  # as it was


def test_a_run_remembers_the_code_commit_it_was_made_from(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "qa.jsonl").write_text(_rows(), encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}  # fmt: skip
    for args in (["init", "-q"], ["add", "qa.jsonl"], ["commit", "-qm", "rows"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, timeout=30)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert (
        run("eval", "qa.jsonl", "-m", "mrr", "--name", "clean", home=home, cwd=repo).returncode == 0
    )
    (repo / "qa.jsonl").write_text(_rows(extra="?"), encoding="utf-8")  # a tracked file edited
    assert (
        run("eval", "qa.jsonl", "-m", "mrr", "--name", "dirty", home=home, cwd=repo).returncode == 0
    )
    clean = _json("runs", "show", "clean", home=home)["lineage"]["code"]
    dirty = _json("runs", "show", "dirty", home=home)["lineage"]["code"]
    assert clean == {"commit": commit, "dirty": False} and dirty == {
        "commit": commit,
        "dirty": True,
    }
    outside = tmp_path / "outside"  # not a git working tree: no commit, not an error
    outside.mkdir()
    (outside / "qa.jsonl").write_text(_rows(), encoding="utf-8")
    assert (
        run("eval", "qa.jsonl", "-m", "mrr", "--name", "nogit", home=home, cwd=outside).returncode
        == 0
    )
    assert _json("runs", "show", "nogit", home=home)["lineage"]["code"] is None


def test_a_killed_eval_leaves_an_interrupted_resumable_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rows = [{"query": f"question {i}", "response": f"answer {i}"} for i in range(80)]
    data = tmp_path / "slow.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with ScriptedJudgeServer(latency_ms=150) as judge:
        write_models(home, judge.url)
        env = {**os.environ, "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1"}
        args = [*RAGMETER, "eval", str(data), "-m", "AnswerRelevancyMetric",
                "--judge-model", "scripted", "--max-concurrency", "1", "--name", "killed"]  # fmt: skip
        process = subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                listed = _json("runs", "list", home=home)
                if listed and listed[0]["rows"]["done"] >= 2:
                    break
                time.sleep(0.2)
            else:
                raise AssertionError("the run stored no row")
            assert listed[0]["state"] == "running"  # its process is alive: running it is
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(30)
        (shown,) = _json("runs", "list", home=home)
        assert shown["state"] == "failed" and shown["resumable"], shown
        info = _json("runs", "show", "killed", home=home)
        assert info["error_kind"] == "interrupted" and "resume it" in info["error"]
        resumed = run("runs", "resume", "killed", home=home)
        assert resumed.returncode == 0, resumed.stderr
        done = _json("runs", "show", "killed", home=home)
        assert done["state"] == "done" and done["progress"] == {"done": 80, "total": 80}
        assert done["scripted_judge"]  # the scripted judge's scores say so
        assert "scripted judge" in run("runs", "show", "killed", home=home).stdout


def test_a_gate_across_dataset_versions_says_which_rows_changed(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "qa.jsonl"
    data.write_text(_rows(), encoding="utf-8")
    assert run("eval", str(data), "-m", "mrr", "--name", "base", home=home).returncode == 0
    lines = _rows(extra=" (edited)").splitlines()
    data.write_text("\n".join(lines[:1] + lines[2:]) + "\n", encoding="utf-8")  # q2 removed
    markdown = tmp_path / "gate.md"
    gated = run("eval", str(data), "-m", "mrr", "--baseline", "base", "--rule",
                "mrr: delta >= -1", "--markdown", str(markdown), home=home)  # fmt: skip
    assert gated.returncode == 0, gated.stdout + gated.stderr
    said = "different versions of the dataset: 0 rows added, 1 removed, 1 changed, 1 unchanged"
    assert said in " ".join(gated.stdout.split())
    assert said in markdown.read_text(encoding="utf-8") and "(paired by row id)" in gated.stdout
