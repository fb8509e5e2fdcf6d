"""``--out`` files of several labelled evaluations (one per retriever): each record or CSV line
names its label; CSV columns cover every metric of every report."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragmeter import evaluate
from ragmeter.cli.results_file import check_results_path, write_results
from ragmeter.errors import ConfigError

ROWS = [
    {"query": "q1", "retrieved_ids": ["a", "b"], "reference_ids": ["b"]},
    {"query": "q2", "retrieved_ids": ["x"], "reference_ids": ["x"]},
]


def _labelled() -> list[tuple[str, object]]:
    first = evaluate(ROWS, metrics=["mrr", "hit_rate"], store=False)
    second = evaluate(ROWS, metrics=["mrr", "RetrieverHitRateMetric"], store=False)
    return [("vector", first), ("bm25", second)]


def test_csv_lines_name_their_label_and_every_metric_has_a_column(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    assert write_results(out, _labelled(), "retriever") == 4  # type: ignore[arg-type]
    with out.open(encoding="utf-8", newline="") as handle:
        lines = list(csv.DictReader(handle))
    assert [(line["retriever"], line["query"]) for line in lines] == [
        ("vector", "q1"), ("vector", "q2"), ("bm25", "q1"), ("bm25", "q2"),
    ]  # fmt: skip
    header = list(lines[0])
    assert header[:5] == ["retriever", "row_index", "query", "mrr", "hit_rate"]
    assert "RetrieverHitRateMetric" in header
    assert (
        lines[0]["RetrieverHitRateMetric"] == "" and float(lines[2]["RetrieverHitRateMetric"]) == 1
    )
    assert not any(h.endswith(" passing") for h in header)  # only metrics with a pass/fail


@pytest.mark.parametrize("name", ["r.jsonl", "r.parquet"])
def test_records_carry_their_label(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    assert write_results(out, _labelled(), "retriever") == 8  # type: ignore[arg-type]
    if name.endswith(".parquet"):
        records = pq.read_table(out).to_pylist()
    else:
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["retriever"] for r in records] == ["vector"] * 4 + ["bm25"] * 4
    assert records[0]["metric_name"] == "mrr" and records[0]["score"] == 0.5


def test_an_unknown_extension_names_it_and_the_accepted_ones() -> None:
    with pytest.raises(ConfigError, match=r"extension '\.xlsx' is not a results format; use "
                       r"\.jsonl, \.ndjson, \.csv, \.parquet$"):  # fmt: skip
        check_results_path(Path("r.xlsx"))
    with pytest.raises(ConfigError, match=r"\(JSON Lines is \.jsonl\)"):
        check_results_path(Path("r.json"))
    assert check_results_path(Path("R.CSV")) == "csv"
