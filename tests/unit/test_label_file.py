"""Label files read and written: JSONL and CSV by extension, pass/fail words, CSV quoting, a
BOM, and every bad line named by file, line and field."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ragmeter.datasets.label_file import label_format, read_labels, write_labels
from ragmeter.errors import DatasetError
from ragmeter.wire.labels import label_value


def _write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return path


def test_jsonl_lines_name_rows_three_ways_and_read_pass_fail_words(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "l.jsonl",
        '{"row_id": "r1", "metric": "faithfulness", "reviewer": "ann", "value": "pass"}\n'
        "\n"
        '{"query": "what?", "metric": "faithfulness", "value": "FAIL", "comment": "no"}\n'
        '{"row_index": 4, "metric": "AnswerRelevancyMetric", "value": 3, "created_at": "x"}\n'
        '{"row_id": 7, "metric": "m", "value": true}\n',
    )
    read = read_labels(path)
    assert [entry.line for entry in read] == [1, 3, 4, 5]
    first, second, third, fourth = (entry.label for entry in read)
    assert (first.row_id, first.reviewer, first.value) == ("r1", "ann", 1.0)
    assert (second.query, second.reviewer, second.value, second.comment) == (
        "what?",
        None,
        0.0,
        "no",
    )
    assert (third.row_index, third.value) == (4, 3.0)
    assert (fourth.row_id, fourth.value) == (7, 1.0)


def test_csv_with_a_bom_quoted_cells_and_empty_cells(tmp_path: Path) -> None:
    text = (
        "row_id,query,row_index,metric,reviewer,value,comment\n"
        ',"a query, with a comma",,faithfulness,ann,false,"said ""no""\non two lines"\n'
        "r2,,,faithfulness,bob,0.5,\n"
    )
    path = _write(tmp_path, "l.csv", text, encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    read = read_labels(path)
    assert [entry.line for entry in read] == [3, 4]  # a record ends on its last line
    first, second = (entry.label for entry in read)
    assert first.row_id is None and first.query == "a query, with a comma"
    assert (first.value, first.comment) == (0.0, 'said "no"\non two lines')
    assert (second.row_id, second.reviewer, second.value) == ("r2", "bob", 0.5)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "a.jsonl",
            '{"row_id": "r", "metric": "m", "value": 1}\n{"row_id": "r", "metric": "m", "value": "maybe"}\n',
            "a.jsonl line 2 field 'value': 'maybe' is not a number, pass/fail or true/false",
        ),
        (
            "b.jsonl",
            '{"metric": "m", "value": 1}\n',
            "b.jsonl line 1: a label names its row by row_id, query or row_index",
        ),
        ("c.jsonl", '{"row_id": "r", "value": 1}\n', "c.jsonl line 1 field 'metric'"),
        ("d.jsonl", '{"row_id": "r", "metric": "m", "value": 1, "score": 2}\n', "field 'score'"),
        ("e.jsonl", "[1, 2]\n", "e.jsonl line 1: a label line is a JSON object"),
        ("f.jsonl", "{not json\n", "f.jsonl line 1: not JSON"),
        ("g.csv", "row_id,metric,value\nr,m,nan\n", "g.csv line 2 field 'value'"),
        ("h.csv", "row_id,metric,value\nr,m,1,extra\n", "h.csv line 2: has more cells"),
        ("i.csv", "row_index,metric,value\n-1,m,1\n", "i.csv line 2 field 'row_index'"),
        ("j.jsonl", "\n\n", "j.jsonl: holds no labels"),
        ("k.txt", "row_id,metric,value\n", "unknown label file type '.txt'"),
    ],
)
def test_a_bad_line_is_named_by_file_line_and_field(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(DatasetError) as caught:
        read_labels(path, name=name)
    assert expected in str(caught.value)


def test_a_file_over_the_line_cap_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "many.jsonl", '{"row_index": 0, "metric": "m", "value": 1}\n' * 4)
    assert len(read_labels(path, max_lines=4)) == 4
    with pytest.raises(DatasetError, match="holds more than 3 labels"):
        read_labels(path, max_lines=3)


def test_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("row_id,metric,value\ncaf\xe9,m,1\n".encode("latin-1"))
    with pytest.raises(DatasetError, match=r"latin\.csv: not UTF-8"):
        read_labels(path)


@pytest.mark.parametrize(
    ("given", "number"),
    [
        ("pass", 1.0),
        ("Fail", 0.0),
        (" TRUE ", 1.0),
        ("false", 0.0),
        (True, 1.0),
        ("4", 4.0),
        (2, 2.0),
    ],
)
def test_label_values(given: object, number: float) -> None:
    assert label_value(given) == number


@pytest.mark.parametrize("given", ["inf", "yes", None, [1]])
def test_label_values_refused(given: object) -> None:
    with pytest.raises(ValueError, match=r"finite|not a number|expected a number"):
        label_value(given)


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_written_labels_read_back_the_same(tmp_path: Path, kind: str) -> None:
    labels = [
        {"row_id": "r1", "query": None, "row_index": 0, "metric": "faithfulness",
         "reviewer": "ann", "value": 1.0, "comment": 'a "quoted", comma', "created_at": "t"},
        {"row_id": None, "query": "q, 2\nlines", "row_index": 1, "metric": "faithfulness",
         "reviewer": "bob", "value": 0.25, "comment": "", "created_at": None},
    ]  # fmt: skip
    out = io.StringIO()
    assert write_labels(out, labels, "csv" if kind == "csv" else "jsonl") == 2
    path = _write(tmp_path, f"round.{kind}", out.getvalue())
    assert label_format(path) == kind
    back = [entry.label for entry in read_labels(path)]
    assert [(b.row_id, b.query, b.row_index, b.metric, b.reviewer, b.value, b.comment) for b in back] == [
        (lb["row_id"], lb["query"], lb["row_index"], lb["metric"], lb["reviewer"], lb["value"], lb["comment"])
        for lb in labels
    ]  # fmt: skip
