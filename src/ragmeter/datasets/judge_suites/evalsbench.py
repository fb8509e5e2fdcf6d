"""EvalsBench (answer correctness against grading notes, English): each answer passes or
fails the expert grading notes (1 = pass). Only ``benchmark_df.csv`` is test data; the
``notes`` column gives the label away and is never read into a row."""

from __future__ import annotations

import csv
from pathlib import Path

from ragmeter.datasets.judge_suites.base import Suite, SuiteItem, content_hash, need
from ragmeter.errors import DatasetError

__all__ = ["read_evalsbench"]

SOURCE = "EvalsBench (explodinggradients/EvalsBench; Apache-2.0, Exploding Gradients)"
_COLUMNS = ("question", "grading_notes", "target", "response")
_LABELS = {"pass": 1, "fail": 0}


def read_evalsbench(folder: Path) -> Suite:
    """The 160 answers of ``folder`` (``evalsbench/``) as an answer-correctness suite."""
    (path,) = need(folder, "benchmark_df.csv")
    items: list[SuiteItem] = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in _COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise DatasetError(f"missing columns {missing}", source=str(path), line=1)
        for record in reader:
            target = (record["target"] or "").strip().lower()
            if target not in _LABELS:
                raise DatasetError(
                    f"target must be pass or fail, got {target!r}",
                    source=str(path),
                    line=reader.line_num,
                    field="target",
                )
            row = {
                "query": record["question"],
                "response": record["response"],
                "reference": record["grading_notes"],
                "metadata": {"topic": record.get("topic") or ""},
            }
            items.append(SuiteItem(row, _LABELS[target], "en"))
    return Suite("evalsbench", "answer_correctness", "binary", items, content_hash([path]), SOURCE)
