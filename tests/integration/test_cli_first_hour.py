"""What a user trips on in the first hour, through a real ``ragmeter`` subprocess: ``--out``
writes the format its extension names (read back here), an unknown extension fails before any
work, and ``ragmeter serve`` on a busy port says so in one line."""

from __future__ import annotations

import csv
import json
import re
import socket
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import open_store
from tests.integration.helpers import json_lines, run

ROWS = [
    {"query": "q1", "retrieved_ids": ["a", "b", "c"], "reference_ids": ["b"], "metadata": {"k": 1}},
    {"query": "q2", "retrieved_ids": ["x", "y"], "reference_ids": ["x", "z"]},
    {"query": "q3", "retrieved_ids": ["m"], "reference_ids": []},
]


def _data(folder: Path) -> Path:
    path = folder / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def _eval(tmp_path: Path, out: Path) -> None:
    done = run("eval", str(_data(tmp_path)), "-m", "mrr,P@2", "--out", str(out),
               home=tmp_path / "home")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"results: {out}" in done.stdout


@pytest.mark.parametrize("name", ["r.jsonl", "r.ndjson", "R.JSONL"])
def test_out_jsonl_holds_one_record_per_row_and_metric(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    _eval(tmp_path, out)
    lines = json_lines(out.read_text(encoding="utf-8"))
    assert [(r["row_index"], r["metric_name"]) for r in lines] == [
        (i, m) for i in range(3) for m in ("mrr", "precision@2")
    ]
    assert lines[0]["score"] == 0.5 and lines[0]["raw_dataset"]["metadata"] == {"k": 1}
    assert lines[4]["score"] is None and lines[4]["error"]


def test_out_parquet_holds_the_same_records_with_nested_fields_as_json(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    _eval(tmp_path, out)
    table = pq.read_table(out)
    assert table.num_rows == 6
    records = table.to_pylist()
    assert [r["metric_name"] for r in records[:2]] == ["mrr", "precision@2"]
    assert records[0]["score"] == 0.5 and records[1]["score"] == 0.5
    assert records[4]["score"] is None and records[4]["error"]
    assert json.loads(records[0]["raw_dataset"])["metadata"] == {"k": 1}
    assert json.loads(records[0]["prediction"]) == ["a", "b", "c"]  # the ranking judged


def test_out_csv_is_one_line_per_row_with_a_column_per_metric(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    _eval(tmp_path, out)
    with out.open(encoding="utf-8", newline="") as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == 3
    first = lines[0]
    assert list(first)[:4] == ["row_index", "query", "mrr", "precision@2"]
    assert (first["query"], float(first["mrr"]), float(first["precision@2"])) == ("q1", 0.5, 0.5)
    assert json.loads(first["row"])["metadata"] == {"k": 1}
    assert json.loads(first["prediction"]) == ["a", "b", "c"]
    assert lines[2]["mrr"] == "" and lines[2]["mrr reason"]  # null: empty cell, reason beside


def test_runs_results_writes_the_format_of_its_extension(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run("eval", str(_data(tmp_path)), "-m", "mrr", home=home).returncode == 0
    run_id = RunStore(open_store(f"sqlite:///{home / 'ragmeter.db'}")).runs()[0][0].id
    out = tmp_path / "export.csv"
    done = run("runs", "results", run_id, "--out", str(out), home=home)
    assert done.returncode == 0, done.stderr
    with out.open(encoding="utf-8", newline="") as handle:
        assert [line["query"] for line in csv.DictReader(handle)] == ["q1", "q2", "q3"]
    refused = run("runs", "results", run_id, "--out", str(tmp_path / "x.xlsx"), home=home)
    assert refused.returncode == 2 and "'.xlsx'" in refused.stderr


@pytest.mark.parametrize(("name", "named"), [("r.json", "'.json'"), ("r.txt", "'.txt'"),
                                             ("results", "no extension")])  # fmt: skip
def test_an_unknown_out_extension_fails_before_any_work(
    tmp_path: Path, name: str, named: str
) -> None:
    home = tmp_path / "home"
    done = run("eval", str(_data(tmp_path)), "-m", "mrr", "--out", str(tmp_path / name),
               home=home)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert named in done.stderr and ".jsonl, .ndjson, .csv, .parquet" in done.stderr
    assert "stored" not in done.stdout and not (tmp_path / name).exists()
    assert not (home / "ragmeter.db").exists()  # no run, no dataset: nothing was done


def test_serve_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("serve", "--port", str(port), home=tmp_path / "home")
    assert done.returncode != 0
    assert done.stderr == f"error: port {port} on 127.0.0.1 is in use; pass --port\n"
    assert "dashboard at" not in done.stdout


def test_a_report_of_a_file_read_from_a_folder_shows_its_name_not_the_folder(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "private-folder-of-ana"
    folder.mkdir()
    home = tmp_path / "home"
    done = run("eval", str(_data(folder).resolve()), "-m", "mrr", home=home)
    assert done.returncode == 0, done.stderr
    assert "qa.jsonl" in done.stdout and str(folder) not in done.stdout
    run_id = RunStore(open_store(f"sqlite:///{home / 'ragmeter.db'}")).runs()[0][0].id
    out = tmp_path / "report.html"
    made = run("report", run_id, "--out", str(out), home=home)
    assert made.returncode == 0, made.stderr
    page = out.read_text(encoding="utf-8")
    assert re.search(r"<dd>qa@1 · qa\.jsonl · [0-9a-f]{12}</dd>", page)  # name, file, hash
    assert str(tmp_path) not in page and "private-folder-of-ana" not in page


def test_demo_export_docs_writes_a_folder_of_markdown_a_space_takes(tmp_path: Path) -> None:
    home, docs = tmp_path / "home", tmp_path / "garden-docs"
    done = run("demo", "--export-docs", str(docs), home=home)
    assert done.returncode == 0, done.stderr
    names = sorted(str(p.relative_to(docs)) for p in docs.rglob("*.md"))
    assert names == [
        "en/composting.md", "en/seed-starting.md", "en/watering.md",
        "zh/balcony-vegetables.md", "zh/kitchen-compost.md", "zh/tea.md",
    ]  # fmt: skip
    assert run("demo", "--export-docs", str(docs), home=home).returncode == 0  # again: replaced
    assert not (home / "ragmeter.db").exists()  # only the copy: no space, no run
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    refused = run("demo", "--export-docs", str(tmp_path / "a-file"), home=home)
    assert refused.returncode == 2 and "is a file" in refused.stderr
