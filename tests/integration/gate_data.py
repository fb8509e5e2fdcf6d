"""Demo-like rows for the gate's tests: 200 synthetic RAG rows with ids whose answers are
taken from their contexts, and the same rows with every tenth answer replaced by claims no
context holds (a change that made 10% of the rows worse)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragmeter.demo.judge_rows import synthetic_rows

ROWS = 200
#: every WORSE_EVERY-th row is made worse in the candidate
WORSE_EVERY = 10
#: the scripted judges' share of flipped verdicts: two seeds are two samples of a judge
NOISE = 0.05
#: the non-inferiority margin the tests gate on
MARGIN = -0.05
UNSUPPORTED = (
    "It was first described in the year 1850 by a Roman engineer. It only works when the "
    "temperature is below freezing. Most experts agree it was banned in every country in 2001."
)


def grounded_rows() -> list[dict[str, Any]]:
    rows = synthetic_rows(ROWS, seed=3)
    for i, row in enumerate(rows):
        row["id"] = f"r{i}"
        row["response"] = " ".join(row["retrieved_contexts"][:3])
    return rows


def worse_rows() -> list[dict[str, Any]]:
    rows = grounded_rows()
    for i in range(0, ROWS, WORSE_EVERY):
        rows[i]["response"] = UNSUPPORTED
    return rows


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
