"""The ``judged`` part of bench/scale.py: a judged run against the scripted judge answering
at 50 ms, the model limited to 3000 requests per minute, on the local executor or on a Ray
cluster of this machine started for the run (2 CPUs: 2 workers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.testing import ScriptedJudgeServer

LIMIT = 3000  # the model's requests_per_minute
LATENCY_MS = 50.0
METRIC = "context_precision"  # one judge request per row
TOML = """[models.scripted]
base_url = "{url}"
model = "scripted"
requests_per_minute = {limit}
"""


def write_judged_rows(path: Path, rows: int) -> None:
    """The demo's judged rows, each query made unique so no judge reply is reused."""
    with path.open("w", encoding="utf-8") as handle:
        for i, row in enumerate(synthetic_rows(rows, seed=3)):
            row["query"] = f"{row['query']} (case {i})"
            handle.write(json.dumps(row) + "\n")


def rates(arrivals: list[float]) -> tuple[float, float | None, int]:
    """Requests per minute over the steady part (the middle 80% of the run's span); over
    the whole minutes from the first arrival (None for a run shorter than a minute); and
    the most requests that arrived in any 60 s.

    The whole-minute rate is what a limit per minute lets through: each minute holds at most
    the limit, and a limiter that keeps pace fills each. The middle-80% rate also depends on
    where its two ends cut the bursts a sliding window allows (the limit's worth of requests
    at once, then a wait for the first to leave the minute)."""
    arrivals = sorted(arrivals)
    span = arrivals[-1] - arrivals[0]
    low, high = arrivals[0] + 0.1 * span, arrivals[0] + 0.9 * span
    steady = bisect_right(arrivals, high) - bisect_right(arrivals, low)
    minutes = int(span // 60.0)
    whole = None
    if minutes:
        whole = bisect_left(arrivals, arrivals[0] + 60.0 * minutes) / minutes
    busiest = max(bisect_right(arrivals, t + 60.0) - i for i, t in enumerate(arrivals))
    return steady / ((high - low) / 60.0), whole, busiest


def _judged_run(data: Path, home: Path, executor: str) -> float:
    """Seconds of the run; on Ray, a cluster of this machine started for the process (no
    address: as many workers as cores, 2 here)."""
    command = [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", METRIC]
    command += ["--judge-model", "scripted", "--executor", executor]
    env = {**os.environ, "RAGMETER_HOME": str(home)}
    env.pop("RAY_ADDRESS", None)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"judged run on {executor} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def part_judged(rows: int, executors: list[str]) -> Iterator[dict[str, Any]]:
    """One judged run of ``rows`` rows on each executor, each with a fresh store and judge,
    given as soon as it is measured."""
    with tempfile.TemporaryDirectory(prefix="ragmeter-scale-judged-") as tmp:
        data = Path(tmp) / "judged.jsonl"
        write_judged_rows(data, rows)
        for executor in executors:
            home = Path(tmp) / f"home-{executor}"
            home.mkdir()
            with ScriptedJudgeServer(latency_ms=LATENCY_MS) as judge:
                judge.arrivals = deque()  # every arrival, not only the latest 100,000
                (home / "ragmeter.toml").write_text(TOML.format(url=judge.url, limit=LIMIT))
                load = round(os.getloadavg()[0], 2)
                seconds = _judged_run(data, home, executor)
                arrivals = list(judge.arrivals)
            steady, whole, busiest = rates(arrivals)
            entry = {"executor": executor, "rows": rows, "seconds": seconds, "load": [load]}
            entry |= {"requests": len(arrivals), "steady_rpm": steady, "peak_rpm": busiest}
            entry |= {"minute_rpm": whole}
            yield entry
            print(f"judged {executor} {rows:,}: {seconds:.0f} s, {len(arrivals)} requests, "
                  f"steady {steady:.0f}/min, whole minutes {whole or 0:.0f}/min, "
                  f"busiest 60 s {busiest}", flush=True)  # fmt: skip
