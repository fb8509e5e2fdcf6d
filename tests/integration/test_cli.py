"""The ``ragmeter`` command as a user runs it: a real subprocess."""

from __future__ import annotations

import csv
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.helpers import run as run_home

ROOT = Path(__file__).resolve().parents[2]
RAGMETER = [sys.executable, "-m", "ragmeter"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [*RAGMETER, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    rows = [
        {"query": "q1", "retrieved_ids": ["a", "b", "c"], "reference_ids": ["b"]},
        {"query": "q2", "retrieved_ids": ["x", "y"], "reference_ids": ["x", "z"]},
        {"query": "q3", "retrieved_ids": ["m"], "reference_ids": []},
    ]
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_eval_prints_summary_and_writes_results(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    result = run(
        "eval",
        str(dataset),
        "--metrics",
        "mrr,ndcg,RetrieverHitRateMetric",
        "--top-k",
        "2",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert "3 rows · top 2" in result.stdout  # the cut-off is in the title, not the names
    assert "mrr@2" not in result.stdout
    assert "RetrieverHitRateMetric" in result.stdout
    assert "0.7500" in result.stdout  # mean mrr cut at 2 over the two scored rows: (0.5 + 1) / 2
    assert "3 result(s) have no score" in result.stdout
    assert "no relevant item" in result.stdout
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 9
    assert {x["metric_name"] for x in lines} == {"mrr", "ndcg", "RetrieverHitRateMetric"}


def test_bad_row_is_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"query": "ok", "contexts": ["a"], "factual": ["a"]}\n{"query": "q", "contexts": "oops"}\n'
    )
    result = run("eval", str(path), "--metrics", "mrr")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "bad.jsonl line 2 (row 1) field 'retrieved_contexts'" in lines[0]
    assert "expected a list of strings" in lines[0]
    assert "Traceback" not in result.stderr


def test_row_lacking_a_metric_field_names_row_metric_and_field(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_text('{"query": "q", "doc_name": "awel.md", "contexts": ["a"]}\n')
    result = run("eval", str(path), "--metrics", "hit_rate@5")
    assert result.returncode == 2
    assert "row 0" in result.stderr
    assert "'hit_rate@5'" in result.stderr
    assert "reference_contexts" in result.stderr


def test_unknown_metric_lists_known_ones(dataset: Path) -> None:
    result = run("eval", str(dataset), "--metrics", "mrr,ndgc@10")
    assert result.returncode == 2
    assert "unknown metric 'ndgc'" in result.stderr
    assert "retrieval_similarity" in result.stderr


def test_metrics_lists_every_registered_metric() -> None:
    result = run("metrics")
    assert result.returncode == 0
    for name in ("hit_rate", "mrr", "precision", "recall", "ndcg", "map", "retrieval_similarity",
                 "RetrieverHitRateMetric", "RetrieverMRRMetric", "RetrieverSimilarityMetric"):  # fmt: skip
        assert name in result.stdout
    assert "Mean reciprocal rank" in result.stdout


def test_eval_with_remote_embeddings(dataset: Path, tmp_path: Path, embedding_server) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "texts.csv"
    path.write_text(
        'question,contexts,factual\nq1,"[""awel operator layer"", ""sunny weather""]","[""awel layer""]"\n'
    )
    result = run(
        "eval", str(path), "-m", "RetrieverSimilarityMetric",
        "--embedding-base-url", embedding_server.base_url, "--embedding-model", "hash-64",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "RetrieverSimilarityMetric" in result.stdout
    assert len(embedding_server.requests) == 1


def test_seed_custom_metric_example_runs() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "custom_metric.py")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "RetrieverMRRMetric [0.5, 1.0, 0.0]" in result.stdout
    assert "mrr [0.5, 1.0, 0.0]" in result.stdout


@pytest.mark.slow
def test_demo_builds_a_space_and_compares_three_retrievers(tmp_path: Path) -> None:
    env_home = tmp_path / "home"
    out = tmp_path / "demo.csv"
    result = run_home("demo", "--out", str(out), home=env_home)
    assert result.returncode == 0, result.stderr
    assert "space 'ragmeter-demo': added 6, updated 0, unchanged 0" in result.stdout
    with out.open(encoding="utf-8", newline="") as handle:
        lines = list(csv.DictReader(handle))

    def hit_rate(retriever: str, kind: str | None = None) -> float:
        hits = [
            float(x["RetrieverHitRateMetric"])
            for x in lines
            if x["retriever"] == retriever
            and (kind is None or json.loads(x["row"])["metadata"].get("kind") == kind)
        ]
        return sum(hits) / len(hits)

    # the three differ for reasons: vector misses the Chinese questions (an English-only
    # embedder) and exact terms, BM25 misses paraphrases; hybrid fuses both
    assert hit_rate("vector") < hit_rate("bm25") < hit_rate("hybrid")
    assert hit_rate("vector", "paraphrase") > hit_rate("bm25", "paraphrase")
    assert hit_rate("bm25", "exact term") > hit_rate("vector", "exact term")
    # the comparison of two retrievers with its verdict, then what to run next
    assert "hybrid against vector, paired by question" in result.stdout
    compared = [x for x in result.stdout.splitlines() if x.startswith("│ RetrieverMRRMetric")]
    assert len(compared) == 2 and compared[1].split("│")[-2].strip()  # a verdict
    for step in ("ragmeter runs list", "ragmeter serve --open", "ragmeter report "):
        assert step in result.stdout
    report_line = next(x for x in result.stdout.splitlines() if "ragmeter report " in x)
    made = run_home(*shlex.split(report_line.strip())[1:], home=env_home, cwd=tmp_path)
    assert made.returncode == 0 and (tmp_path / "report.html").is_file(), made.stderr
    assert '"泡茶指南": ' in result.stdout  # a DB-GPT-style chunk is shown
    header = next(
        line for line in result.stdout.splitlines() if "vector" in line and "bm25" in line
    )
    assert header.index("vector") < header.index("bm25") < header.index("hybrid")
    for text in ("30 rows", "RetrieverMRRMetric", "RetrieverSimilarityMetric", "by kind of"):
        assert text in result.stdout
    # the test set step: 8 questions generated offline and scored by chunk id
    assert "A generated test set: 8 questions" in result.stdout
    assert "relevance by chunk id" in result.stdout and "hit_rate" in result.stdout
    again = run_home("demo", home=env_home)
    assert "added 0, updated 0, unchanged 6" in again.stdout
    search = run_home(
        "space",
        "search",
        "ragmeter-demo",
        "绿茶的水温",
        "--retriever",
        "bm25",
        "--json",
        home=env_home,
    )
    assert json.loads(search.stdout.splitlines()[0])["document"] == "zh/tea.md"
    # the searches the demo suggests find what they ask for (the Chinese one in Chinese)
    suggested = [
        shlex.split(line.strip())[1:]
        for line in result.stdout.splitlines()
        if line.strip().startswith("ragmeter space search")
    ]
    assert len(suggested) == 2 and "English-only" in result.stdout
    for args, document in zip(suggested, ("en/composting.md", "zh/tea.md"), strict=True):
        hits = run_home(*args, "--json", home=env_home)
        assert hits.returncode == 0, hits.stderr
        assert json.loads(hits.stdout.splitlines()[0])["document"] == document, args


def test_help_shows_config_sections_in_brackets() -> None:
    """Rich markup must not eat '[models.NAME]' or '[server]' from the help."""
    assert "[models.NAME]" in run("eval", "--help").stdout
    assert "[server] api_keys" in run("serve", "--help").stdout
