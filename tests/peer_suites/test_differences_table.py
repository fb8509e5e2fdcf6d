"""docs/peer-differences.md as the tests read it: one table, its header, each case once, ours a
number or null; rows without a case id are read by people only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peer_suites._differences import DOC, TableError, read_differences

HEAD = "| case id | peer value | ours | why |\n| --- | --- | --- | --- |\n"


def _doc(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "peer-differences.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_documented_table_reads() -> None:
    listed = read_differences(DOC)
    empty = listed[
        "tests/unit/test_answer_correctness.py::test_answer_correctness_empty_statements"
    ]
    assert (empty.peer, empty.ours) == ("1.0", None)
    assert all("|" not in case_id for case_id in listed)


def test_rows_by_case_id_and_rows_without_one(tmp_path: Path) -> None:
    path = _doc(
        tmp_path,
        "Intro.\n\n" + HEAD
        + "| `a.py::t (strict)` | 1.0 | 0.5 | a reason with `\\|E\\|` in it |\n"
        + "| — (a peer) | 0 | 1 | no case shows it |\n\nAfter.\n",
    )  # fmt: skip
    listed = read_differences(path)
    assert list(listed) == ["a.py::t (strict)"]
    assert listed["a.py::t (strict)"].ours == 0.5
    assert "\\|E\\|" in listed["a.py::t (strict)"].why


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (HEAD + "| `a` | 1 | 0 | x |\n\n" + HEAD, "expected one table of differences, found 2"),
        ("no table\n", "expected one table of differences, found 0"),
        ("| case | peer | ours | why |\n| --- | --- | --- | --- |\n", "line 1: the header"),
        (HEAD + "| `a` | 1 | 0 | x |\n| `a` | 1 | 0 | y |\n", "line 4: case 'a' is listed twice"),
        (HEAD + "| `a` | 1 | none | x |\n", "line 3: 'ours' must be a number or null"),
        (HEAD + "| `a` | 1 | 0 |\n", "line 3: expected 4 cells, found 3"),
    ],
)
def test_a_malformed_table_names_the_line(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(TableError, match=says):
        read_differences(_doc(tmp_path, text))
