"""``ragmeter labels import/export/list`` through the real command on a real store: lines
naming rows by id, query or index, the default reviewer, a bad line named with exit 2 and
nothing kept, and an export that imports again to the same labels (JSONL and CSV)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.helpers import json_lines, run

ROWS = [
    {"id": "r1", "query": "q one", "retrieved_ids": ["a"], "reference_ids": ["a"]},
    {"id": "r2", "query": "q two", "retrieved_ids": ["a"], "reference_ids": ["b"]},
    {"query": "q three", "retrieved_ids": ["b"], "reference_ids": ["b"]},
    {"query": "q three", "retrieved_ids": ["c"], "reference_ids": ["b"]},
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with dataset ``ds`` (4 rows) stored by one run; its run id in ``run_id``."""
    data = tmp_path / "ds.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    done = run("eval", str(data), "--metrics", "hit_rate", home=tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = run("runs", "list", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (tmp_path / "run_id").write_text(json.loads(listed.stdout)[0]["id"], encoding="utf-8")
    return tmp_path


def _labels(home: Path, *args: str) -> list[dict[str, object]]:
    done = run("labels", "list", "--json", *args, home=home)
    assert done.returncode == 0, done.stderr
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found


def _key(labels: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [
        (lb["row_index"], lb["metric"], lb["reviewer"], lb["value"], lb["comment"]) for lb in labels
    ]


def test_import_list_and_export_round_trip(home: Path) -> None:
    lines = [
        {"row_id": "r1", "metric": "faithfulness", "value": "pass", "comment": "fine"},
        {"row_id": "r2", "metric": "faithfulness", "reviewer": "bob", "value": "fail"},
        {"row_index": 2, "metric": "AnswerRelevancyMetric", "value": 4},
    ]
    file = home / "labels.jsonl"
    file.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    done = run("labels", "import", str(file), "--dataset", "ds", "--reviewer", "ann", home=home)
    assert done.returncode == 0, done.stderr
    assert "kept 3 label(s)" in done.stdout
    found = _labels(home, "--dataset", "ds")
    assert _key(found) == [
        (0, "faithfulness", "ann", 1.0, "fine"),
        (1, "faithfulness", "bob", 0.0, ""),
        (2, "AnswerRelevancyMetric", "ann", 4.0, ""),
    ]
    run_id = (home / "run_id").read_text(encoding="utf-8")
    assert _key(_labels(home, "--run", run_id)) == _key(found)  # the run's rows are the same
    on_run = home / "on-run.csv"
    on_run.write_text("row_index,metric,value\n3,other,1\n", encoding="utf-8")
    done = run("labels", "import", str(on_run), "--run", run_id, home=home)
    assert done.returncode == 0, done.stderr
    (given,) = _labels(home, "--dataset", "ds", "--metric", "other")
    assert (given["row_index"], given["reviewer"], given["run_id"]) == (3, "local", run_id)
    run("datasets", "rm", "ds", home=home)
    again = run("eval", str(home / "ds.jsonl"), "--metrics", "hit_rate", home=home, cwd=home)
    assert again.returncode == 0, again.stderr
    done = run("labels", "import", str(file), "--dataset", "ds", "--reviewer", "ann", home=home)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(run("runs", "list", "--json", home=home).stdout)[0]["id"]
    assert _key(_labels(home, "--dataset", "ds", "--reviewer", "bob")) == [_key(found)[1]]
    table = run("labels", "list", "--dataset", "ds", home=home)
    assert "faithfulness" in table.stdout and "0 (r1)" in table.stdout
    exported = run("labels", "export", "--dataset", "ds", home=home)
    assert exported.returncode == 0, exported.stderr
    written = json_lines(exported.stdout)
    assert [w.get("row_id") for w in written] == ["r1", "r2", None]
    assert written[2]["query"] == "q three" and written[2]["row_index"] == 2
    assert all(w["created_at"] for w in written)
    for suffix in ("jsonl", "csv"):
        out = home / f"export.{suffix}"
        done = run("labels", "export", "--run", run_id, "--out", str(out), home=home)
        assert done.returncode == 0, done.stderr
        # forget them all (a fresh dataset version of the same rows has none), then import
        run("datasets", "rm", "ds", home=home)
        again = run("eval", str(home / "ds.jsonl"), "--metrics", "hit_rate", home=home, cwd=home)
        assert again.returncode == 0, again.stderr
        assert _labels(home, "--dataset", "ds") == []
        done = run("labels", "import", str(out), "--dataset", "ds", home=home)
        assert done.returncode == 0, done.stderr
        assert _key(_labels(home, "--dataset", "ds")) == _key(found), suffix
        new_run = json.loads(run("runs", "list", "--json", home=home).stdout)[0]["id"]
        run_id = new_run


def test_ambiguous_query_duplicate_bad_value_and_unknown_row_exit_2(home: Path) -> None:
    cases = [
        (
            {"query": "q three", "metric": "m", "value": 1},
            "line 2 field 'query': 2 rows have query",
        ),
        (
            {"row_id": "nope", "metric": "m", "value": 1},
            "line 2 field 'row_id': no row of the dataset",
        ),
        ({"row_index": 9, "metric": "m", "value": 1}, "line 2 field 'row_index': row 9 is not in"),
        ({"row_id": "r1", "metric": "faithfulness", "value": 3}, "outside faithfulness's scale"),
    ]
    good = json.dumps({"row_id": "r1", "metric": "m", "value": 1})
    for index, (line, message) in enumerate(cases):
        file = home / f"bad{index}.jsonl"
        file.write_text(f"{good}\n{json.dumps(line)}\n", encoding="utf-8")
        done = run("labels", "import", str(file), "--dataset", "ds", home=home)
        assert done.returncode == 2, done.stderr
        assert f"bad{index}.jsonl" in done.stderr and message in " ".join(done.stderr.split())
    assert _labels(home, "--dataset", "ds") == []  # all or none: the good line was not kept


def test_bad_file_and_bad_options_exit_2(home: Path) -> None:
    odd = home / "labels.txt"
    odd.write_text("x\n", encoding="utf-8")
    done = run("labels", "import", str(odd), "--dataset", "ds", home=home)
    assert done.returncode == 2 and "unknown label file type '.txt'" in done.stderr
    good = home / "ok.csv"
    good.write_text("row_index,metric,value\n0,m,pass\n", encoding="utf-8")
    done = run("labels", "import", str(good), home=home)
    assert done.returncode == 2 and "name a run or a dataset" in done.stderr
    done = run("labels", "import", str(good), "--dataset", "missing", home=home)
    assert done.returncode == 2, done.stderr
    done = run("labels", "export", "--dataset", "ds", "--out", str(home / "x.xlsx"), home=home)
    assert done.returncode == 2 and "unknown label file type '.xlsx'" in done.stderr
