"""``ragmeter eval --qrels QRELS --run RUN`` as a user runs it: bad combinations of options
and bad lines stop with exit code 2 and one line saying what is wrong."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.integration.helpers import json_lines, run


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n", encoding="utf-8")
    results = tmp_path / "run.txt"
    results.write_text("q1 Q0 d1 1 0.9 mine\nq1 Q0 d2 2 0.8 mine\n", encoding="utf-8")
    return qrels, results


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "give a dataset (DATA), or TREC files with --qrels and --run"),
        (["--qrels", "QRELS"], "--qrels needs --run"),
        (["--run", "RUN"], "--run needs --qrels"),
        (["rows.jsonl", "--qrels", "QRELS", "--run", "RUN"], "not both"),
        (["--qrels", "QRELS", "--run", "RUN", "--space", "s", "-k", "5"], "--top-k, --space: not"),
        (["--qrels", "QRELS", "--run", "RUN", "--judge-model", "m"], "--judge-model: not for"),
        (["--qrels", "QRELS", "--run", "RUN", "--format", "xml"], "--format must be one of"),
        (["--qrels", "QRELS", "--run", "RUN", "--depth", "0"], "--depth"),
        (["rows.jsonl", "--complete"], "--complete is for TREC files"),
        (["rows.jsonl", "-m", "mrr", "--format", "trec"], "--format is for TREC files"),
        (["--qrels", "QRELS", "--run", "RUN", "--no-relevant", "null"], "--no-relevant: not"),
    ],
)
def test_bad_combinations_exit_2_naming_the_options(
    files: tuple[Path, Path], args: list[str], says: str
) -> None:
    qrels, results = files
    given = [str(qrels) if a == "QRELS" else str(results) if a == "RUN" else a for a in args]
    done = run("eval", *given, cwd=qrels.parent)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr, done.stderr


def test_trec_text_alone_on_standard_output_notes_and_storing_on_standard_error(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    qrels, results = files
    out = tmp_path / "results.jsonl"
    done = run(
        "eval", "--qrels", str(qrels), "--run", str(results), "-m", "P.1,2", "-m", "num_q",
        "--format", "trec", "--out", str(out), "--store", home=tmp_path / "home",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "P_1                   \tq1\t1.0000\n"
        "P_2                   \tq1\t0.5000\n"
        "num_q                 \tall\t1\n"
        "P_1                   \tall\t1.0000\n"
        "P_2                   \tall\t0.5000\n"
    )
    assert "1 judged query is not in run.txt: skipped (q2; --complete scores them 0)" in (
        done.stderr
    )
    assert "stored (ragmeter runs show" in done.stderr and "results:" in done.stderr
    assert [r["metric_name"] for r in json_lines(out.read_text())] == [
        "num_q",
        "precision@1",
        "precision@2",
    ]
    summary = run(
        "eval", "--qrels", str(qrels), "--run", str(results), "--complete",
        "--format", "trec-summary", home=tmp_path / "home",
    )  # fmt: skip
    assert summary.returncode == 0, summary.stderr
    assert "stored" not in summary.stderr  # a TREC evaluation keeps nothing unless --store
    lines = summary.stdout.splitlines()
    assert lines[:3] == ["runid                 \tall\tmine", "num_q                 \tall\t2",
                         "num_ret               \tall\t2"]  # fmt: skip
    assert "\tq1\t" not in summary.stdout and summary.stderr == ""


def test_the_default_is_a_table_of_trec_evals_official_measures(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    qrels, results = files
    done = run("eval", "--qrels", str(qrels), "--run", str(results), "--no-store")
    assert done.returncode == 0, done.stderr
    assert "run.txt (runid mine) · qrels qrels.txt · 1 queries" in done.stdout
    cells = {
        tuple(c.strip() for c in line.strip("│").split("│"))[:2]
        for line in done.stdout.splitlines()
        if line.startswith("│")
    }
    assert {("num_q", "1"), ("num_rel", "1"), ("map", "1.0000"), ("P_1000", "0.0010")} <= cells
    assert ("gm_map", "1.0000") in cells and ("recip_rank", "1.0000") in cells


def test_a_bad_line_exits_2_naming_file_line_and_field(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2\n", encoding="utf-8")
    results = tmp_path / "run.txt.gz"
    results.write_bytes(gzip.compress(b"q1 Q0 d1 1 0.9 mine\nq1 Q0 d2 2 high mine\n"))
    done = run("eval", "--qrels", str(qrels), "--run", str(results), "--no-store")
    assert done.returncode == 2 and done.stdout == ""
    assert f"{qrels} line 2 field 'REL': missing" in done.stderr
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    done = run("eval", "--qrels", str(qrels), "--run", str(results), "--no-store")
    assert done.returncode == 2
    assert f"{results} line 2 field 'SCORE': expected a number, got 'high'" in done.stderr
    done = run("eval", "--qrels", str(qrels), "--run", str(results), "-m", "P.x")
    assert done.returncode == 2 and "P.x" in done.stderr


def test_metrics_repeat_for_datasets_too(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"query": "q", "retrieved_ids": ["a", "b"], "reference_ids": ["b"]}) + "\n",
        encoding="utf-8",
    )
    done = run("eval", str(rows), "-m", "mrr", "-m", "P.1,2", "--no-store", "--out", "o.jsonl",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    scores = {r["metric_name"]: r["score"] for r in json_lines((tmp_path / "o.jsonl").read_text())}
    assert scores == {"mrr": 0.5, "precision@1": 0.0, "precision@2": 0.5}
