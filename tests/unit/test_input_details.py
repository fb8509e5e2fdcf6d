"""Input details: user embedders' vectors are normalised, sync wrappers work inside a
running loop, URLs lose their passwords, and files with a BOM or multi-line cells read right."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragmeter._sync import run_sync
from ragmeter.datasets import DatasetLimits, load_dataset
from ragmeter.datasets.row import nesting_depth
from ragmeter.errors import DatasetError, LimitError, redact
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.retrieval.similarity import RetrieverSimilarityMetric
from ragmeter.runs.api import run_sync as used_by_runs
from ragmeter.service.middleware import json_too_deep


class _Unnormalised:
    """A user's embedder that returns raw, non-unit vectors (one axis per known word)."""

    name = "raw"
    words = ("tea", "water", "heat")

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            [[10.0 * text.split().count(w) for w in self.words] for text in texts],
            dtype=np.float32,
        )


def test_a_user_embedders_vectors_are_normalised_for_cosines() -> None:
    metric = RetrieverSimilarityMetric(embedder=_Unnormalised())
    retrieved, reference = ["tea tea water"], ["tea water water"]
    expected = (2 * 1 + 1 * 2) / (np.sqrt(5) * np.sqrt(5))  # cosine of (2,1,0) and (1,2,0)
    rows = load_dataset(
        [{"query": "q", "retrieved_contexts": retrieved, "reference_contexts": reference}]
    )
    (outcome,) = asyncio.run(metric.compute_rows(list(rows), EvaluationContext()))
    assert outcome.score == pytest.approx(expected, abs=1e-6)


def test_sync_compute_works_where_an_event_loop_is_running() -> None:
    metric = RetrieverSimilarityMetric(embedder=_Unnormalised())

    async def in_a_notebook() -> float | None:
        return metric.sync_compute(["tea"], ["tea"]).score

    assert asyncio.run(in_a_notebook()) == pytest.approx(1.0)


def test_run_sync_is_one_helper_shared_with_the_runs_layer() -> None:
    assert used_by_runs is run_sync

    async def three() -> int:
        return 3

    async def nested() -> int:
        return run_sync(three())

    assert run_sync(three()) == 3 and asyncio.run(nested()) == 3


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("judge http://bob:s3cret@judge:8000/v1 failed", "judge http://judge:8000/v1 failed"),
        ("postgresql+psycopg://u:p@ss@db:5432/x", "postgresql+psycopg://db:5432/x"),
        ("https://token@github.com/org", "https://github.com/org"),
        ("http://host:80/path@x and ftp://a@b", "http://host:80/path@x and ftp://b"),
        ("no URL, user:pass@host stays", "no URL, user:pass@host stays"),
    ],
)
def test_redact_strips_credentials_from_urls(text: str, shown: str) -> None:
    assert redact(text) == shown


def _deep(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


def test_a_bom_does_not_break_the_first_jsonl_line_or_the_csv_header(tmp_path: Path) -> None:
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + b'{"query": "q1"}\n{"query": "q2"}\n')
    assert [r.query for r in load_dataset(jsonl)] == ["q1", "q2"]
    table = tmp_path / "rows.csv"
    table.write_bytes(b"\xef\xbb\xbfquestion,answer\r\nq1,a1\r\n")
    (row,) = load_dataset(table)
    assert (row.query, row.response) == ("q1", "a1")
    whole = tmp_path / "rows.json"
    whole.write_bytes(b'\xef\xbb\xbf[{"query": "q"}]')
    assert len(load_dataset(whole)) == 1


def test_csv_lines_count_the_lines_of_multi_line_cells(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(
        'question,answer\nq1,"one\ntwo\nthree"\n\nq2,a2\nq3,"x\r\ny"\n,no query\n',
        encoding="utf-8",
        newline="",
    )
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    assert (caught.value.row, caught.value.line) == (3, 9)
    path.write_text('question,answer\nq1,"one\ntwo"\nq2,a2\n', encoding="utf-8", newline="")
    assert [load_dataset(path).line_of(i) for i in (0, 1)] == [2, 4]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json"])
def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"latin{suffix}"
    first = (
        b"question\n"
        if suffix == ".csv"
        else b'[{"query": "a"},\n'
        if suffix == ".json"
        else b'{"query": "a"}\n'
    )
    path.write_bytes(first + b'{"query": "caf\xe9"}\n')
    with pytest.raises(DatasetError, match="is not UTF-8") as caught:
        load_dataset(path, name="upload" + suffix)
    assert caught.value.line == 2 and str(caught.value).startswith(f"upload{suffix} line 2")


def test_an_oversized_csv_cell_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("question,answer\nq1,a1\nq2," + "x" * 200_000 + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"big\.csv line \d+: invalid CSV: field larger"):
        load_dataset(path)


def test_rows_nested_too_deeply_are_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(
        json.dumps({"query": "ok"})
        + "\n"
        + '{"query": "q", "metadata": '
        + "[" * 10_000
        + "]" * 10_000
        + "}\n",
        encoding="utf-8",
    )
    with pytest.raises(DatasetError, match=r"deep\.jsonl line 2: nested too deeply"):
        load_dataset(path)
    with pytest.raises(
        DatasetError, match=r"<rows> \(row 0\) field 'metadata': nested deeper than 64 levels$"
    ):
        load_dataset([{"query": "q", "metadata": _deep(70)}])
    limits = DatasetLimits(max_depth=8, section="[server]")
    with pytest.raises(
        DatasetError, match=r"nested deeper than 8 levels \(\[server\] max_json_depth\)"
    ):
        load_dataset([{"query": "q", "extra_field": _deep(8)}], limits=limits)
    assert len(load_dataset([{"query": "q", "metadata": _deep(6)}], limits=limits)) == 1
    table = tmp_path / "deep.csv"
    table.write_text('question,metadata\nq,"' + "[" * 5000 + '"\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="field 'metadata': expected a JSON object"):
        load_dataset(table)


def test_the_row_cap_stops_reading(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"query": f"q{i}"}) + "\n" for i in range(10)), "utf-8")
    limits = DatasetLimits(max_rows=5, section="[server]")
    with pytest.raises(
        LimitError, match=r"many.jsonl holds more than 5 rows \(\[server\] max_rows\)"
    ):
        load_dataset(path, name="many.jsonl", limits=limits)
    assert len(load_dataset(path)) == 10


@pytest.mark.parametrize(
    ("body", "limit", "too_deep"),
    [
        (b"{}", 1, False),
        (b'{"a": [1]}', 1, True),
        (b'{"a": [1]}', 2, False),
        (b'{"s": "[[[[{{{{"}', 1, False),  # brackets inside strings do not count
        (b'{"s": "\\"[[[", "t": []}', 2, False),  # nor after an escaped quote
        (b'{"s": "\\\\", "t": [[]]}', 2, True),  # an escaped backslash ends no string
        (b"[" * 40, 32, True),  # unclosed, as a parser would recurse into it
        (b"[" + b"[], " * 999 + b"[]]", 2, False),
        (b'{"s": "unterminated [[[[', 1, False),  # invalid: left to the parser
    ],
)
def test_json_depth_is_found_by_one_scan(body: bytes, limit: int, too_deep: bool) -> None:
    assert json_too_deep(body, limit) is too_deep
    if not too_deep and body.endswith((b"}", b"]")):
        assert nesting_depth(json.loads(body), 10**6) <= limit
