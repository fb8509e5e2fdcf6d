"""The gate on 100,000-result runs: ``ragmeter gate`` (in process, as ``ragmeter.gate``) on
two stored runs of 50,000 rows x 2 metrics (mrr, hit_rate) and on the same runs' results files
(``ragmeter eval --out``), with an absolute rule, a null-rate rule and a baseline rule that
fails (so the worst rows are read and shown).

The candidate's relevant item drops from rank 1 to rank 3 in every tenth row. Timed: the whole
``gate`` call (reading both runs, pairing, the statistics, the rows shown), median and max of
several repeats after a warm-up. Building the runs is not timed.

Run: ``.venv/bin/python bench/gate.py`` (``--rows 2000`` for a quick check); it rewrites its
section of ``docs/benchmarks.md`` unless ``--no-write``. It uses a temporary ``RAGMETER_HOME``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs

RULES = ["mrr: delta >= -0.01", "hit_rate.mean >= 0.9", "null_rate <= 0.01"]


def _rows(count: int, worse: bool) -> list[dict[str, Any]]:
    rows = []
    for i in range(count):
        ids = [f"d{i}-{k}" for k in range(5)]
        rank = 2 if worse and i % 10 == 0 else 0
        rows.append(
            {"id": f"q{i}", "query": f"Where is part {i} described?",
             "response": f"Part {i} is described in section {i % 97}.",
             "retrieved_ids": ids, "reference_ids": [ids[rank]]}
        )  # fmt: skip
    return rows


def _timed(work: Callable[[], object], repeats: int) -> tuple[float, float]:
    work()  # warm-up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), max(seconds)


def _measure(rows: int, repeats: int, folder: Path) -> list[str]:
    import ragmeter

    runs, files = [], []
    for name, worse in (("baseline", False), ("candidate", True)):
        report = ragmeter.evaluate(_rows(rows, worse), "mrr,hit_rate", store=True)
        assert report.run_id is not None
        runs.append(report.run_id)
        files.append(report.to_jsonl(folder / f"{name}.results.jsonl"))
    lines = []
    for label, (base, candidate) in (("stored runs", runs), ("results files", files)):
        result = ragmeter.gate(candidate, RULES, base)
        verdicts = ", ".join(o.verdict for o in result.outcomes)
        shown = sum(len(o.rows) for o in result.outcomes)
        median, most = _timed(lambda c=candidate, b=base: ragmeter.gate(c, RULES, b), repeats)
        lines.append(
            f"| {label} | {rows:,} x 2 | {median:.2f} / {most:.2f} | {verdicts} | {shown} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["RAGMETER_HOME"] = home
        lines = _measure(args.rows, args.repeats, Path(home))
    table = [
        "| candidate and baseline | rows x metrics | gate, s (median / max) | verdicts "
        "| rows shown |",
        "|---|---|---|---|---|",
        *lines,
    ]
    body = (
        f"`ragmeter.gate(candidate, rules, baseline)` with the rules {', '.join(RULES)}; the "
        "candidate's relevant item drops from rank 1 to rank 3 in every tenth row, so the mrr "
        "rule fails and its ten worst rows are read whole and shown. Stored runs are read in one "
        "query of their scores, verdicts, queries and row ids; results files are parsed line by "
        f"line. {args.repeats} repeats after a warm-up. {machine_line('numpy', 'sqlalchemy')}\n\n"
        + "\n".join(table)
        + "\n"
    )
    print(body)
    if not args.no_write:
        write_section("gate", "The gate on 100,000-result runs", body)


if __name__ == "__main__":
    main()
