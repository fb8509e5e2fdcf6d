"""A stored run against an unstored one, as a user runs them: ``ragmeter eval FILE -m
hit_rate,mrr`` (stored: the dataset and every result go into a fresh store; also into a
store that holds the same file's dataset already, as a user's next run of a test set), the
same with ``--no-store``, and ``evaluate()`` from a Python script, each a fresh subprocess, over
retrieval rows (``retrieved_ids``, ``reference_ids``, an ``id``; every 50th row has no
relevant id, so its scores are null with a reason). Wall time from start to exit and the
child's peak resident memory (``getrusage`` of the process). The commands alternate,
``--repeat`` times each, and each figure is the median. A ratio is the median of each
round's ratio (a stored command over the no-store command of the same round, seconds
apart), so that load on a shared machine, which comes and goes, falls on both sides of
each ratio; its range over the rounds is shown too. Goal: a stored run within 1.5x the
unstored run's time and memory.

``--baseline SRC`` runs another checkout's ``src`` folder the same way in the same run (the
code before a change), at the sizes of ``--baseline-rows``, its rounds alternating with the
code's own.

Run: ``.venv/bin/python bench/stored_runs.py [--baseline /path/to/old/src]``; it rewrites
its section of ``docs/benchmarks.md`` unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs

SRC = Path(__file__).resolve().parents[1] / "src"
METRICS = "hit_rate,mrr"
GOAL = 1.5
WORDS = ["workflow", "agent", "index", "retrieval", "chunk", "prompt", "model", "rerank"]
EVALUATE = (
    "import sys, ragmeter; "
    "report = ragmeter.evaluate(sys.argv[1], sys.argv[2]); "
    "print(report.summary())"
)


def write_rows(path: Path, rows: int) -> None:
    """``rows`` retrieval rows of about 200 bytes each (seed 1)."""
    rng = random.Random(1)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            words = " ".join(rng.choice(WORDS) for _ in range(6))
            retrieved = [f"d{i}-{k}" for k in range(5)]
            relevant = [retrieved[rng.choice([0, 0, 1, 2, 4])]] if i % 50 else []
            row = {
                "id": f"q{i}",
                "query": f"How does the {words} of part {i} work?",
                "retrieved_ids": retrieved,
                "reference_ids": relevant,
            }
            handle.write(json.dumps(row) + "\n")


def timed(command: list[str], src: Path, home: Path) -> tuple[float, float]:
    """Seconds from start to exit and peak memory (MB) of ``command`` run with ``src`` first
    on the path and ``home`` as its data folder; it must succeed."""
    env = {**os.environ, "PYTHONPATH": str(src), "RAGMETER_HOME": str(home)}
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    errors = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{errors[-2000:]}")
    return seconds, usage.ru_maxrss / 1024  # KB on Linux


#: each command's (seconds, peak MB), one per round
Runs = dict[str, list[tuple[float, float]]]


def _commands(data: Path) -> dict[str, list[str]]:
    stored = [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", METRICS]
    return {
        "stored": stored,
        "stored, store exists": stored,
        "stored, same file stored before": stored,
        "no-store": [
            sys.executable, "-m", "ragmeter", "eval", str(data), "-m", METRICS, "--no-store",
        ],
        "evaluate()": [sys.executable, "-c", EVALUATE, str(data), METRICS],
    }  # fmt: skip


def _round(src: Path, data: Path, found: Runs) -> None:
    """Each way to evaluate ``data`` with ``src`` once, in order, into ``found``."""
    for name, command in _commands(data).items():
        with tempfile.TemporaryDirectory(prefix="ragmeter-bench-home-") as home:
            if name == "stored, store exists":  # the store made by an earlier run
                timed(_one_row(command, Path(home)), src, Path(home))
            if name == "stored, same file stored before":  # a user's next run of the file
                timed(command, src, Path(home))
            found.setdefault(name, []).append(timed(command, src, Path(home)))
        print(f"  {name}: {found[name][-1][0]:.2f} s, {found[name][-1][1]:.0f} MB")


def measure(codes: dict[str, Path], data: Path, repeat: int) -> dict[str, Runs]:
    """Every round of each code (``src`` folders by label), the codes alternating round by
    round."""
    found: dict[str, Runs] = {code: {} for code in codes}
    for at in range(repeat):
        for code, src in codes.items():
            print(f"  round {at + 1} of {repeat}, {code}")
            _round(src, data, found[code])
    return found


def _one_row(command: list[str], home: Path) -> list[str]:
    """``command`` on a one-row file, which makes the store (untimed)."""
    one = home / "one.jsonl"
    one.write_text(
        json.dumps({"query": "q", "retrieved_ids": ["a"], "reference_ids": ["a"]}) + "\n"
    )
    return [*command[:4], str(one), *command[5:]]


def _ratio(runs: Runs, name: str, at: int) -> tuple[str, bool]:
    """The median and range of ``name``'s round-by-round ratios to the no-store command
    (field ``at``: 0 seconds, 1 memory), and whether the median is within the goal."""
    ratios = [a[at] / b[at] for a, b in zip(runs[name], runs["no-store"], strict=True)]
    middle = statistics.median(ratios)
    return f"{middle:.2f}x ({min(ratios):.2f}-{max(ratios):.2f})", middle <= GOAL


def rows_of(rows: int, runs: Runs, code: str) -> list[str]:
    out = []
    for name, found in runs.items():
        seconds = statistics.median(s for s, _ in found)
        megabytes = statistics.median(m for _, m in found)
        verdict = ""
        if name.startswith("stored"):
            (time_text, time_ok), (memory_text, memory_ok) = (
                _ratio(runs, name, 0),
                _ratio(runs, name, 1),
            )
            met = "met" if time_ok and memory_ok else "NOT met"
            verdict = f"{time_text} / {memory_text}: {met}"
        out.append(f"| {rows:,} | {code} | {name} | {seconds:.2f} | {megabytes:.0f} | {verdict} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[50_000, 200_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a src folder of the code to compare with")
    parser.add_argument("--baseline-rows", type=int, nargs="+", default=[50_000])
    parser.add_argument(
        "--baseline-note",
        default="the code before results were written in bulk (one ORM object per result, "
        "each holding a copy of its row)",
        help="what the baseline is, for the table's text",
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    lines = [
        "| rows | code | command | wall s | peak MB | stored vs no-store: time / memory "
        "(median of the rounds' ratios, their range) |",
        "|---:|---|---|---:|---:|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="ragmeter-bench-data-") as tmp:
        for rows in args.rows:
            data = Path(tmp) / f"rows-{rows}.jsonl"
            write_rows(data, rows)
            codes = {"now": SRC}
            if args.baseline is not None and rows in args.baseline_rows:
                codes = {"before": args.baseline, "now": SRC}
            print(f"{rows:,} rows")
            found = measure(codes, data, args.repeat)
            for code in codes:
                lines += rows_of(rows, found[code], code)
    body = (
        f"`ragmeter eval FILE -m {METRICS}` stored (a fresh store each time: the dataset and "
        'every result written; "store exists": into a store an earlier one-row run made; '
        '"same file stored before": into a store an earlier run of the same file made, so the '
        "dataset version is found by the file's key, the hash of its bytes, and reused, as "
        "when a user runs the same test set again after a change) and with `--no-store`, and "
        "`ragmeter.evaluate(FILE, ...)` in a Python script; retrieval rows with an id, "
        "ranked ids and relevant ids. Each "
        "command is a fresh process; wall time from start to exit, peak resident memory of "
        f"the process (getrusage); median of {args.repeat} rounds, in each of which every "
        "command runs once (and the code before, when shown, alternates round by round with "
        "the code now). A ratio is the median of the rounds' own ratios (a stored command "
        "over the no-store command of the same round, seconds apart), with their range: load "
        f"that comes and goes falls on both sides of each. Goal: stored within {GOAL}x of "
        "`--no-store` in time and memory."
        + (f' "before" is {args.baseline_note}.' if args.baseline is not None else "")
        + " The machine may be shared with other work while this runs.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + machine_line("SQLAlchemy", "orjson")
    )
    print(body)
    if not args.no_write:
        write_section("stored_runs", "A stored run against an unstored one", body)


if __name__ == "__main__":
    main()
