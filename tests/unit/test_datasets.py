"""Loading rows from every supported source, aliases, and errors that name the row and field."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ragmeter import DatasetError, RagmeterError, load_dataset

ROWS = [
    {
        "question": "what awel talked about",
        "doc_name": "awel.md",
        "factual": ["AWEL is a workflow language."],
        "contexts": ["AWEL is a workflow language.", "Other chunk."],
        "ground_truth": "A workflow language.",
        "answer": "AWEL is a workflow expression language.",
        "retrieved_ids": [3, "7"],
        "reference_ids": ["3"],
        "metadata": {"split": "dev"},
        "team": "search",
    }
]


def _check_canonical(dataset) -> None:  # type: ignore[no-untyped-def]
    (row,) = list(dataset)
    assert row.query == "what awel talked about"
    assert row.reference_contexts == ["AWEL is a workflow language."]
    assert row.retrieved_contexts == ["AWEL is a workflow language.", "Other chunk."]
    assert row.reference == "A workflow language."
    assert row.response == "AWEL is a workflow expression language."
    assert row.retrieved_ids == ["3", "7"]
    assert row.reference_ids == ["3"]
    assert row.metadata == {"split": "dev"}
    assert row.extra == {"team": "search"}
    raw = row.to_raw()
    assert raw["query"] == "what awel talked about"
    assert raw["team"] == "search"


def test_list_of_dicts() -> None:
    _check_canonical(load_dataset(ROWS))


def test_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n" + json.dumps(ROWS[0]) + "\n\n", encoding="utf-8")
    dataset = load_dataset(path)
    _check_canonical(dataset)
    assert dataset.line_of(0) == 2


def test_json_array_and_dbgpt_request_body(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(ROWS), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps({"scene_key": "recall", "datasets": ROWS}))
    _check_canonical(load_dataset(tmp_path / "a.json"))
    _check_canonical(load_dataset(tmp_path / "b.json"))


def test_dataframe_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame(ROWS)
    _check_canonical(load_dataset(frame))
    frame = frame.drop(columns=["metadata"]).assign(retrieved_ids=[["3", "7"]])
    frame.to_parquet(tmp_path / "rows.parquet")
    (row,) = list(load_dataset(tmp_path / "rows.parquet"))
    assert row.retrieved_contexts == ["AWEL is a workflow language.", "Other chunk."]
    assert row.retrieved_ids == ["3", "7"]


def test_dataframe_missing_values_are_absent() -> None:
    frame = pd.DataFrame([{"query": "a", "reference": None}, {"query": "b", "reference": "r"}])
    rows = list(load_dataset(frame))
    assert rows[0].reference is None
    assert rows[1].reference == "r"


def test_csv_list_cells(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(
        "question,contexts,factual,metadata\n"
        '"q1","[""a"", ""b""]","[\'a\']","{""k"": 1}"\n'
        "q2,single chunk,,\n",
        encoding="utf-8",
    )
    rows = list(load_dataset(path))
    assert rows[0].retrieved_contexts == ["a", "b"]
    assert rows[0].reference_contexts == ["a"]
    assert rows[0].metadata == {"k": 1}
    assert rows[1].retrieved_contexts == ["single chunk"]
    assert rows[1].reference_contexts is None


def test_error_names_file_line_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [{"query": "ok"}, {"query": "ok2"}, {"query": "q", "contexts": "not a list"}]
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    err = info.value
    assert isinstance(err, RagmeterError)
    assert (err.row, err.field, err.line) == (2, "retrieved_contexts", 3)
    message = str(err)
    assert "bad.jsonl line 3" in message
    assert "row 2" in message
    assert "'retrieved_contexts'" in message
    assert "expected a list of strings" in message


@pytest.mark.parametrize(
    ("row", "field", "fragment"),
    [
        ({"contexts": ["a"]}, "query", "every row needs a query"),
        ({"query": ""}, "query", "non-empty string"),
        ({"query": "q", "retrieved_contexts": ["a", 5]}, "retrieved_contexts", "item 1 is int 5"),
        ({"query": "q", "question": "other"}, "query", "given twice"),
        ({"query": "q", "metadata": "x"}, "metadata", "an object"),
        ({"query": "q", "retrieved_ids": ["a"], "contexts": ["a", "b"]}, "retrieved_ids", "align"),
    ],
)
def test_bad_rows(row: dict, field: str, fragment: str) -> None:
    with pytest.raises(DatasetError) as info:
        load_dataset([{"query": "fine"}, row])
    assert info.value.row == 1
    assert info.value.field == field
    assert fragment in str(info.value)


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="unknown dataset format"):
        load_dataset(tmp_path / "rows.txt")
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(tmp_path / "missing.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"query": "a"}\n{"query": \n', encoding="utf-8")
    with pytest.raises(DatasetError, match="line 2: invalid JSON"):
        load_dataset(broken)
    with pytest.raises(DatasetError, match="expected an object"):
        load_dataset(["just a string"])
    with pytest.raises(DatasetError, match="single dict"):
        load_dataset({"query": "a"})


def test_json_rows_read_exactly_whatever_reader_takes_them(tmp_path: Path) -> None:
    """Rows are read by orjson where it reads them exactly and by ``json`` otherwise: an id
    past 64 bits stays an exact integer, NaN and a lone surrogate read as ``json`` reads
    them, and a row ``json`` refuses names its line and column as before."""
    path = tmp_path / "rows.jsonl"
    lines = [
        '{"query": "plain", "id": 7, "metadata": {"x": 1.0000000000000002}}',
        '{"query": "big", "id": 18446744073709551616, "metadata": {"n": -9223372036854775809}}',
        '{"query": "nan", "metadata": {"v": NaN}}',
        '{"query": "sur \\ud800 x"}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = [dict(r) for r in load_dataset(path).each_raw()]
    assert [r["query"] for r in rows] == ["plain", "big", "nan", "sur \ud800 x"]
    assert rows[0]["id"] == 7
    assert rows[0]["metadata"] == {"x": 1.0000000000000002}
    assert rows[1]["id"] == 18446744073709551616
    assert isinstance(rows[1]["id"], int)
    assert rows[1]["metadata"] == {"n": -9223372036854775809}
    assert rows[2]["metadata"]["v"] != rows[2]["metadata"]["v"]  # NaN, as json reads it
    path.write_text('{"query": "a"}\n{"query": "b",}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 2: invalid JSON: Expecting .* at column 15"):
        load_dataset(path)


def test_a_long_integer_across_the_files_read_blocks_stays_exact(tmp_path: Path) -> None:
    """The file is scanned for long digit runs 4 MB at a time: a run split between two
    blocks still sends the file to the exact reader."""
    path = tmp_path / "rows.jsonl"
    head = '{"query": "pad", "metadata": {"p": "'
    before = '{"query": "big", "id": '
    first = head + "x" * ((1 << 22) - len(head) - 4 - len(before) - 10) + '"}}\n'
    second = before + "123456789012345678901}\n"
    path.write_text(first + second, encoding="utf-8")
    digits_at = len(first) + len(before)
    assert digits_at < 1 << 22 < digits_at + 21  # the digits straddle the first block's end
    rows = [dict(r) for r in load_dataset(path).each_raw()]
    assert rows[1]["id"] == 123456789012345678901
    assert isinstance(rows[1]["id"], int)
