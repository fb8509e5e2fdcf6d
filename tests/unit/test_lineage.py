"""Lineage's pure parts: row digests ignore key order and see every value, a dataset's hash
its rows in order, a file's key its bytes as they were read; what changed between two
lineages; names a file's rows are kept under; labels a user gives, checked."""

from __future__ import annotations

import hashlib
import json
import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter._version import ragmeter_version
from ragmeter.datasets import load_dataset
from ragmeter.datasets.digest import READER_VERSION, ContentHash, content_hash, row_digest
from ragmeter.errors import ConfigError
from ragmeter.reports.html import shared_name
from ragmeter.runs.planning.lineage import (
    RunLabels,
    changes,
    dataset_name_of,
    flat_lineage,
)

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_rows = st.dictionaries(st.text(min_size=1, max_size=6), _values, min_size=1, max_size=5)


@given(_rows)
def test_a_row_digest_does_not_depend_on_key_order(row: dict[str, Any]) -> None:
    assert row_digest(row) == row_digest(dict(reversed(list(row.items()))))


@given(_rows, st.text(min_size=1, max_size=6))
def test_a_row_digest_sees_a_changed_value(row: dict[str, Any], key: str) -> None:
    changed = {**row, key: ["changed", row.get(key)]}
    assert row_digest(changed) != row_digest(row)


@given(st.lists(_rows, min_size=2, max_size=5, unique_by=row_digest))
def test_a_dataset_hash_sees_order_and_every_row(rows: list[dict[str, Any]]) -> None:
    assert content_hash(rows) == content_hash([dict(r) for r in rows])
    assert content_hash(rows) != content_hash(rows[::-1])
    assert content_hash(rows) != content_hash(rows[:-1])


def _as_stored(value: Any) -> Any:
    """``value`` with each NUL character as U+FFFD, as the store keeps text."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_as_stored(v) for v in value]
    if isinstance(value, dict):
        return {_as_stored(k): _as_stored(v) for k, v in value.items()}
    return value


def _sorted_text(row: dict[str, Any]) -> bytes:
    """A row's JSON text as the store keeps it, keys sorted, no spaces (orjson; the
    standard library where orjson cannot write it)."""
    row = _as_stored(row)
    try:
        return orjson.dumps(row, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        text = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode()


@given(st.lists(_rows, max_size=8), st.lists(st.integers(1, 4), max_size=8))
def test_a_dataset_hash_does_not_depend_on_how_its_rows_are_batched(
    rows: list[dict[str, Any]], sizes: list[int]
) -> None:
    """The hash is that of the rows' canonical texts joined by commas, whichever batches
    they were fed in (rows are hashed a batch at a time as they are written)."""
    digest, start = ContentHash(), 0
    for size in [*sizes, len(rows)]:
        digest.add_rows(rows[start : start + size])
        start += size
    joined = b",".join(map(_sorted_text, rows))
    assert digest.hexdigest() == content_hash(rows) == hashlib.sha256(joined).hexdigest()


def test_a_dataset_hash_is_that_of_its_rows_sorted_json_texts() -> None:
    """Checked against the standard library's JSON (keys sorted, no spaces): a row orjson
    cannot write (an integer past 64 bits) is written by it too, and does not change how
    the other rows are hashed."""
    rows = [{"query": "q 问题", "ids": ["b", "a"], "m": {"z": 1, "a": None}}, {"n": 2**70}]
    texts = [json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in rows]
    assert content_hash(rows) == hashlib.sha256(",".join(texts).encode()).hexdigest()
    assert content_hash(rows[:1]) == hashlib.sha256(texts[0].encode()).hexdigest()


@pytest.mark.parametrize("ahead", [False, True], ids=["when-asked", "while-read"])
def test_a_file_key_follows_the_bytes_read_and_only_while_they_stay(
    tmp_path: Path, ahead: bool
) -> None:
    """The same whether the key is computed when asked or while the rows are read (rows
    that will be stored): a key computed ahead holds only while the file stays as it was."""
    path = tmp_path / "rows.jsonl"
    rows = [{"query": f"q{i}", "retrieved_ids": ["a"], "reference_ids": ["a"]} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    first = load_dataset(path, key_ahead=ahead)
    assert first.origin is not None
    key = first.origin.key()
    assert key is not None and len(key) == 64
    assert load_dataset(path, key_ahead=not ahead).origin.key() == key  # type: ignore[union-attr]
    # rows made from the file's rows are not the file's
    assert first.take([0, 1]).origin is None
    assert first.with_columns({"response": ["a", "b", "c"]}).origin is None
    assert load_dataset(rows).origin is None
    # the file changed after its rows were read: they may not be its rows any more
    path.write_text("".join(json.dumps(r, indent=None) + " \n" for r in rows), encoding="utf-8")
    assert first.origin.key() is None
    again = load_dataset(path, key_ahead=ahead).origin
    assert again is not None and again.key() not in (None, key)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # touched: not known the same
    assert again.key() is None


@pytest.mark.parametrize("ahead", [False, True], ids=["when-asked", "while-read"])
def test_a_parquet_files_key_names_the_libraries_that_read_it(tmp_path: Path, ahead: bool) -> None:
    """pandas and pyarrow read Parquet: another version of either may read the same bytes
    otherwise, so their versions are part of the key (a JSONL file's key has none)."""
    import pandas as pd

    rows = [{"query": "q", "retrieved_ids": ["a"], "reference_ids": ["a"]}]
    parquet, jsonl = tmp_path / "rows.parquet", tmp_path / "rows.jsonl"
    pd.DataFrame(rows).to_parquet(parquet)
    jsonl.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    read = f"ragmeter {ragmeter_version()} reader {READER_VERSION}"
    libraries = f" pandas {version('pandas')} pyarrow {version('pyarrow')}"
    for path, line in ((parquet, read + libraries), (jsonl, read)):
        origin = load_dataset(path, key_ahead=ahead).origin
        assert origin is not None
        expected = hashlib.sha256(f"{line}\n".encode() + path.read_bytes()).hexdigest()
        assert origin.key() == expected, path.name


def test_changes_list_what_differs_in_order() -> None:
    a = {
        "label": "vector@5 on docs",
        "target": {"retriever": "vector", "top_k": 5},
        "metrics": ["mrr"],
        "dataset": {"version": 1, "rows": 3},
    }
    b = {
        "label": "hybrid@5 on docs",
        "target": {"retriever": "hybrid", "top_k": 5},
        "metrics": ["mrr", "ndcg"],
        "dataset": {"version": 1, "rows": 4},
        "code": {"dirty": True},
    }
    found = [(c.key, c.a, c.b) for c in changes(a, b)]
    assert found == [
        ("label", "vector@5 on docs", "hybrid@5 on docs"),
        ("target.retriever", "vector", "hybrid"),
        ("metrics", "mrr", "mrr, ndcg"),
        ("code.dirty", None, True),
    ]  # dataset.rows is said by the hash, not listed
    assert changes(a, dict(a)) == []
    assert flat_lineage({"judge": None, "x": {"y": [1, 2]}}) == {"judge": None, "x.y": "1, 2"}


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("/home/me/data/qa.jsonl", "qa"),
        ("qa.jsonl.gz", "qa"),
        ("my data!.csv", "my data"),
        ("2024.jsonl", "dataset-2024"),
        ("<rows>", None),
        ("", None),
    ],
)
def test_a_file_is_kept_under_its_name(source: str, name: str | None) -> None:
    assert dataset_name_of(source) == name


def test_no_folder_is_shown() -> None:
    assert shared_name("/home/me/secret/qa.jsonl") == "qa.jsonl"
    assert shared_name("C:\\Users\\me\\qa.jsonl") == "qa.jsonl"
    assert shared_name("request") == "request"


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"name": ""}, "1 to 200"),
        ({"tags": ("a b",)}, "invalid tag"),
        ({"tags": tuple(f"t{i}" for i in range(21))}, "at most 20 tags"),
        ({"note": "x" * 4001}, "at most 4000"),
    ],
)
def test_labels_past_their_limits_are_refused(bad: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        RunLabels(**bad)


def test_labels_are_tidied() -> None:
    labels = RunLabels(name=" exp ", tags=("a", "b", "a"), note="n")
    assert (labels.name, labels.tags) == ("exp", ("a", "b"))
