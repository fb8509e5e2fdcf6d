"""Scale, measured: how ragmeter's time and memory grow with the work, part by part.

- ``rows``: ``ragmeter eval FILE -m hit_rate@10,mrr,ndcg@10,precision@5,recall@10,map``,
  stored (a fresh store each time), as a user runs it: a fresh process on the local executor,
  wall time from start to exit and its peak resident memory (``getrusage`` of the child),
  over seeded retrieval rows (10-20 retrieved ids, 1-3 relevant ids). Goal at 1,000,000 rows:
  under 60 s and 4 GB, memory growing no faster than the rows (MB per 100k rows).
- ``views``: the requests the dashboard's Run, Row and Compare views make (static/*.js), on
  two stored runs of the given number of results each, p95 over ``--requests`` per view, on
  SQLite and PostgreSQL (a throwaway server as the tests start it). Goal: p95 under 1 s.
- ``judged``: a judged run with the scripted judge answering at 50 ms and the model's
  ``requests_per_minute`` 3000: requests per minute over whole minutes (within 5% of the
  limit) and the busiest 60 s (never over it), on the local executor and on Ray (2 workers).

Each part keeps its figures in ``docs/assets/scale/results.json`` (a part measured again
replaces its own sizes), draws ``docs/assets/scale/*.png`` with matplotlib and rewrites the
``scale`` section of ``docs/benchmarks.md`` from all of them.

Run: ``.venv/bin/python bench/scale.py --part rows --rows 100000,300000,1000000``,
``--part views --results 100000 --stores sqlite,postgresql``, ``--part judged --judged-rows
20000 --executors local,ray``; ``--no-write`` prints only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from _scale_plots import plot_all
from stored_runs import SRC, timed

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "docs" / "assets" / "scale"
RESULTS = ASSETS / "results.json"
METRICS = "hit_rate@10,mrr,ndcg@10,precision@5,recall@10,map"
GOAL_ROWS = 1_000_000
GOAL_S, GOAL_MB = 60.0, 4096.0
WORDS = ["workflow", "agent", "index", "retrieval", "chunk", "prompt", "model", "rerank"]


def write_rows(path: Path, rows: int, seed: int = 1, worse: float = 0.0) -> None:
    """``rows`` retrieval rows (seeded): an id, a query, 10-20 ranked ids of a corpus of a
    million, 1-3 relevant ids (each retrieved at a random rank, or not retrieved at all);
    ``worse``: the share of rows whose relevant ids are never retrieved (a worse system)."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            words = " ".join(rng.choice(WORDS) for _ in range(6))
            retrieved = [f"d{rng.randrange(1_000_000)}" for _ in range(rng.randint(10, 20))]
            relevant = []
            for _ in range(rng.randint(1, 3)):
                found = rng.random() < 0.7 and rng.random() >= worse
                relevant.append(rng.choice(retrieved) if found else f"d{rng.randrange(10**6)}")
            row = {
                "id": f"q{i}",
                "query": f"How does the {words} of part {i} work?",
                "retrieved_ids": retrieved,
                "reference_ids": sorted(set(relevant)),
            }
            handle.write(json.dumps(row) + "\n")


def machine() -> dict[str, Any]:
    """Cores and memory of this machine, and the load when a part starts."""
    with open("/proc/meminfo", encoding="utf-8") as info:
        total_kb = int(next(line for line in info if line.startswith("MemTotal")).split()[1])
    return {
        "cores": os.cpu_count(),
        "ram_gb": round(total_kb / 1024 / 1024, 1),
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def part_rows(sizes: list[int]) -> list[dict[str, Any]]:
    """The stored ``ragmeter eval`` at each size, each in a fresh store."""
    found = []
    with tempfile.TemporaryDirectory(prefix="ragmeter-scale-") as tmp:
        for rows in sizes:
            data = Path(tmp) / f"rows-{rows}.jsonl"
            write_rows(data, rows)
            home = Path(tmp) / f"home-{rows}"
            home.mkdir()
            command = [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", METRICS]
            load = machine()["load"]
            seconds, megabytes = timed(command, SRC, home)
            found.append({"rows": rows, "seconds": seconds, "peak_mb": megabytes, "load": load})
            print(f"rows {rows:,}: {seconds:.1f} s, {megabytes:.0f} MB (load {load})", flush=True)
            data.unlink()
    return found


def load_results() -> dict[str, Any]:
    return json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}


def merge(old: list[dict[str, Any]], new: list[dict[str, Any]], keys: tuple[str, ...]) -> list[Any]:
    """``old`` with the entries of ``new`` replacing those of the same ``keys``."""
    fresh = {tuple(entry[k] for k in keys) for entry in new}
    kept = [entry for entry in old if tuple(entry[k] for k in keys) not in fresh]
    return sorted([*kept, *new], key=lambda entry: tuple(entry[k] for k in keys))


def rows_table(entries: list[dict[str, Any]]) -> str:
    lines = [
        "| rows | results | wall s | peak MB | MB per 100k rows | load at start | goal at 1M |",
        "|---:|---:|---:|---:|---:|---|---|",
    ]
    for e in entries:
        goal = ""
        if e["rows"] == GOAL_ROWS:
            fast, small = e["seconds"] < GOAL_S, e["peak_mb"] < GOAL_MB
            goal = f"time < 60 s: {'met' if fast else 'NOT met'}; "
            goal += f"memory < 4 GB: {'met' if small else 'NOT met'}"
        lines.append(
            f"| {e['rows']:,} | {6 * e['rows']:,} | {e['seconds']:.1f} | {e['peak_mb']:.0f} | "
            f"{e['peak_mb'] / (e['rows'] / 100_000):.0f} | {e['load'][0]:.2f} | {goal} |"
        )
    per_rows = [e["peak_mb"] / e["rows"] for e in entries]
    steady = all(later <= earlier * 1.05 for earlier, later in pairwise(per_rows))
    verdict = "met" if steady else "NOT met"
    lines.append(
        f"\nMemory growing no faster than the rows (MB per 100k rows not rising): {verdict}."
    )
    return "\n".join(lines)


def _load(entry: dict[str, Any]) -> str:
    """The load average when a measurement started (n/a where it was not recorded)."""
    load = entry.get("load")
    return "n/a" if not load else f"{load[0]:.2f}"


def views_table(entries: list[dict[str, Any]]) -> str:
    lines = [
        "| store | results per run | view | first s | median s | p95 s | slowest request "
        "(median s) | load at start | goal p95 < 1 s |",
        "|---|---:|---|---:|---:|---:|---|---|---|",
    ]
    for e in entries:
        verdict = "met" if e["p95_s"] < 1.0 else "NOT met"
        lines.append(
            f"| {e['store']} | {e['results']:,} | {e['view']} | {e['first_s']:.3f} | "
            f"{e['median_s']:.3f} | {e['p95_s']:.3f} | "
            f"{e.get('slowest', '?')} ({e.get('slowest_s', float('nan')):.3f}) | "
            f"{_load(e)} | {verdict} |"
        )
    return "\n".join(lines)


def judged_table(entries: list[dict[str, Any]]) -> str:
    lines = [
        "| executor | rows | wall s | judge requests | requests/min, whole minutes "
        "| requests/min, middle 80% | busiest 60 s | load at start | within 5% of 3000 "
        "| never over 3000 |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for e in entries:
        whole = e.get("minute_rpm")
        close = "n/a" if whole is None else "met" if abs(whole - 3000) <= 150 else "NOT met"
        under = "met" if e["peak_rpm"] <= 3000 else "NOT met"
        shown = "n/a" if whole is None else f"{whole:.0f}"
        lines.append(
            f"| {e['executor']} | {e['rows']:,} | {e['seconds']:.0f} | {e['requests']:,} | "
            f"{shown} | {e['steady_rpm']:.0f} | {e['peak_rpm']} | "
            f"{_load(e)} | {close} | {under} |"
        )
    return "\n".join(lines)


PARTS_TEXT = {
    "rows": (
        "### Stored runs against rows\n\n"
        f"`ragmeter eval FILE -m {METRICS}` on the local executor, stored into a fresh "
        "store, a fresh process each time; wall time from start to exit, peak resident memory "
        "of the process (getrusage). Seeded rows: 10-20 retrieved ids, 1-3 relevant ids. Goal "
        "at 1,000,000 rows: under 60 s and under 4 GB, memory growing no faster than the rows "
        "(MB per 100k rows not rising)."
    ),
    "views": (
        "### Dashboard views against results\n\n"
        "Two stored runs (base, and a candidate worse on a fifth of the rows) of the given "
        "results each (rows x the 6 metrics above) made by `ragmeter eval`, then a real "
        "`ragmeter serve` on them; each view's API requests (those its script makes: "
        "static/run.js, row.js, compare.js) sent one after another over loopback, timed "
        "together; the first round apart (columns not yet kept by the server), then median "
        "and p95 of the following rounds. Requests made one after another are an upper "
        "bound on what the page, which sends some at once, waits for. Goal: p95 under 1 s "
        "at 1,000,000 results, on SQLite and PostgreSQL."
    ),
    "judged": (
        "### Judged runs against the judge's limit\n\n"
        "`ragmeter eval FILE -m context_precision --judge-model scripted` (one judge request "
        "per row; `--executor ray` with no address: a Ray cluster of this machine started "
        "for the run, 2 CPUs, 2 workers), the scripted judge answering every request after "
        "50 ms, the model's `requests_per_minute = 3000`. Requests per minute counted where "
        "they arrive (the judge server): over the whole minutes from the first arrival (what "
        "a limit per minute lets through: at most the limit in each; n/a where a run was "
        "measured before this column), over the middle 80% of the run's span (which also "
        "depends on where its ends cut the bursts a sliding window allows), and the most in "
        "any 60 s. Goal (100,000 rows): the whole-minute rate within 5% of 3000, never over "
        "it."
    ),
}


def section(results: dict[str, Any], plots: dict[str, str]) -> str:
    info = results.get("machine", machine())
    parts = [
        "How time and memory grow with the work. This machine is shared with other work while "
        f"the bench runs ({info['cores']} cores, {info['ram_gb']} GB RAM; the load average "
        "when each measurement started is recorded where known: n/a where it was not), so "
        "figures are of a busy box. A run's plain results (a score on the row's own fields, "
        "a ranked list cut to a metric's depth included) are stored as columnar batches; a "
        "dataset version's rows as one JSON row each."
    ]
    tables = {"rows": rows_table, "views": views_table, "judged": judged_table}
    for part, table in tables.items():
        if results.get(part):
            text = f"{PARTS_TEXT[part]}\n\n{table(results[part])}"
            if part in plots:
                text += f"\n\n![{part}](assets/scale/{plots[part]})"
            parts.append(text)
    return "\n\n".join(parts) + "\n\n" + machine_line("SQLAlchemy", "ray", "matplotlib")


def _keep(results: dict[str, Any], no_write: bool) -> None:
    if not no_write:
        ASSETS.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


def _sizes(text: str) -> list[int]:
    return [int(part.replace("_", "")) for part in text.split(",") if part]


def main() -> None:
    from _scale_judged import part_judged
    from _scale_views import part_views

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["rows", "views", "judged"], action="append")
    parser.add_argument("--rows", type=_sizes, default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--results", type=_sizes, default=[1_000_000])
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--judged-rows", type=int, default=100_000)
    parser.add_argument("--executors", default="local,ray")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--report-only", action="store_true", help="measure nothing: redraw")
    args = parser.parse_args()
    results = load_results()
    results.setdefault("machine", machine())
    for part in [] if args.report_only else args.part or ["rows", "views", "judged"]:
        results["machine"] = machine()
        if part == "rows":
            new, keys = part_rows(args.rows), ("rows",)
        elif part == "views":
            stores, new = args.stores.split(","), []
            for size in args.results:
                new += part_views(size, stores, args.requests, write_rows, METRICS)
            keys = ("store", "results", "view")
        else:
            for entry in part_judged(args.judged_rows, args.executors.split(",")):
                results[part] = merge(results.get(part, []), [entry], ("executor", "rows"))
                _keep(results, args.no_write)  # each run kept as soon as it is measured
            continue
        results[part] = merge(results.get(part, []), new, keys)
        _keep(results, args.no_write)
    body = section(results, plot_all(results, ASSETS) if not args.no_write else {})
    print(body)
    if not args.no_write:
        write_section("scale", "Scale: time and memory against the work", body)


if __name__ == "__main__":
    main()
