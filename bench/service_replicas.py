"""Replicas: the service load test (``service_load.py``'s request mix and concurrency) against
one ``ragmeter serve`` on SQLite and two ``ragmeter serve`` processes sharing one PostgreSQL
database, side by side; then a 5,000-row judged run spread over the two replicas with the
scripted judge limited to ``requests_per_minute = 600``, counted from the judge's own log.

No proxy stands before the two replicas: the load generator sends its requests round-robin
to them (a run made on one is polled and paged on the other). PostgreSQL is a throwaway
server started as the tests start theirs (``tests/pg.py``: initdb and pg_ctl on a free
loopback port). The judged part posts two runs of 2,500 rows at once, one to each replica,
with one metric that asks the judge once per row (``AnswerRelevancyMetric``); the limit is
shared through the store (``ragmeter.judge._rate``). The judge prints a line per answered
request; the bench stamps each line as it arrives and reports the requests, their count in
each whole minute from the first and the most requests in any sliding 60 s window, which
must not pass 600 (the bench fails if it does).

Run: ``.venv/bin/python bench/service_replicas.py`` (about 12 minutes; ``--rows 500`` for a
short try with ``--no-write``); it rewrites its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import httpx

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from _serve import KEY, free_port, start_server
from service_load import Recorder, one_client, percentile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.pg import PostgresServer, bindir  # noqa: E402  (the repository root, just added)

LIMIT = 600  # requests_per_minute of the scripted model
KINDS = ("create run", "run status", "results page")


class RoundRobin:
    """Sends each request to the next of ``clients`` in turn (no proxy)."""

    def __init__(self, clients: list[httpx.AsyncClient]) -> None:
        self._next = itertools.cycle(clients)

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return await next(self._next).request(method, path, **kwargs)


async def load(bases: list[str], clients: int, runs: int, rows: int) -> tuple[Recorder, float]:
    """``clients`` concurrent clients of ``service_load``, spread over ``bases``."""
    rec = Recorder()
    headers = {"Authorization": f"Bearer {KEY}"}
    limits = httpx.Limits(max_connections=clients + 2)
    async with AsyncExitStack() as stack:
        https = [
            await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=f"{base}/api/v2/serve", headers=headers, limits=limits, timeout=60
                )
            )
            for base in bases
        ]
        spread = RoundRobin(https)
        started = time.perf_counter()
        await asyncio.gather(*(one_client(spread, rec, c, runs, rows) for c in range(clients)))  # type: ignore[arg-type]
        return rec, time.perf_counter() - started


def load_row(name: str, rec: Recorder, seconds: float) -> str:
    api = [v for kind in KINDS for v in rec.latency.get(kind, [])]
    p50, p99 = percentile(api, 0.5) * 1000, percentile(api, 0.99) * 1000
    status = rec.latency.get("run status", [0.0])
    return (
        f"| {name} | {len(api) / seconds:.0f} | {p50:.1f} | {p99:.1f} | "
        f"{percentile(status, 0.99) * 1000:.1f} | {len(api)} | {len(rec.errors)} |"
    )


class JudgeLog:
    """``ragmeter judge-server`` in a subprocess, the arrival time of each request line it
    prints (one per chat request answered)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.times: list[float] = []
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400", "NO_COLOR": "1"}
        args = [sys.executable, "-m", "ragmeter", "judge-server", "--port", str(self.port)]
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/models", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise SystemExit("the scripted judge did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("chat "):
                self.times.append(time.time())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def judged_body(replica: int, rows: int) -> dict[str, Any]:
    return {
        "scene_key": "dataset",
        "name": f"judged on replica {replica}",
        "context": {"model": "scripted"},
        "evaluate_metrics": ["AnswerRelevancyMetric"],
        "datasets": [
            {
                "query": f"replica {replica} question {i}: what does layer {i % 7} do?",
                "response": f"Layer {i % 7} routes requests {i} times a day.",
                "retrieved_contexts": [f"Layer {i % 7} routes requests; note {i}."],
            }
            for i in range(rows)
        ],
        "parallel_num": 16,
    }


def judged(bases: list[str], rows: int) -> tuple[list[dict[str, Any]], float]:
    """Two runs of ``rows`` rows started at once, one per replica, followed to their end."""
    headers = {"Authorization": f"Bearer {KEY}"}
    https = [
        httpx.Client(base_url=f"{b}/api/v2/serve", headers=headers, timeout=120) for b in bases
    ]
    try:
        started = time.monotonic()
        ids = []
        for index, http in enumerate(https):
            answer = http.post("/evaluate/runs", json=judged_body(index + 1, rows))
            answer.raise_for_status()
            ids.append(answer.json()["data"]["run_id"])
        infos: list[dict[str, Any]] = [{} for _ in ids]
        while time.monotonic() - started < 3600:
            infos = [
                http.get(f"/evaluate/runs/{i}").json()["data"]
                for http, i in zip(https, ids, strict=True)
            ]
            if all(info["state"] in ("done", "failed", "cancelled") for info in infos):
                break
            time.sleep(2)
        return infos, time.monotonic() - started
    finally:
        for http in https:
            http.close()


def most_in_window(times: list[float], window: float = 60.0) -> int:
    """The most requests in any ``window`` seconds (each window starting at a request)."""
    ordered = sorted(times)
    return max(
        (bisect.bisect_left(ordered, t + window) - i for i, t in enumerate(ordered)), default=0
    )


def rate_report(times: list[float]) -> tuple[dict[str, float], str]:
    """The requests, their count in each whole minute from the first one (the last, partial
    minute left out) and the most in any sliding 60 s window. Per whole minute rather than
    requests over a span: the limit lets requests go as places free, in bursts, and a span
    cut between bursts would count one burst more than its minutes."""
    ordered = sorted(times)
    first, last = ordered[0], ordered[-1]
    minutes = int((last - first) // 60)
    counts = [
        bisect.bisect_left(ordered, first + 60 * (m + 1))
        - bisect.bisect_left(ordered, first + 60 * m)
        for m in range(minutes)
    ]
    figures = {
        "requests": len(ordered),
        "per_minute": sum(counts) / minutes if minutes else float("nan"),
        "most_in_60s": most_in_window(ordered),
    }
    text = (
        f"the judge answered **{len(ordered)} requests** in {(last - first) / 60:.1f} minutes; "
        f"per whole minute from the first request **{figures['per_minute']:.0f} "
        f"requests** on average (each minute: {', '.join(map(str, counts))}); the most in any "
        f"sliding 60 s window: **{figures['most_in_60s']}** (limit {LIMIT})"
    )
    return figures, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--runs", type=int, default=15, help="runs per client")
    parser.add_argument("--rows", type=int, default=5, help="rows per run")
    parser.add_argument("--judged-rows", type=int, default=2500, help="rows per judged run")
    parser.add_argument("--workers", type=int, default=2, help="[server] workers")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    binaries = bindir()
    if binaries is None:
        raise SystemExit("no PostgreSQL server binaries (scripts/install.sh installs them)")
    loadavg = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ragmeter-bench-") as tmp, ExitStack() as stack:
        judge = JudgeLog()
        stack.callback(judge.stop)
        models = (
            f'[models.scripted]\nbase_url = "{judge.url}"\nmodel = "scripted"\n'
            f"requests_per_minute = {LIMIT}\n\n[server]\nworkers = {args.workers}\n"
        )
        postgres = PostgresServer(binaries)
        stack.callback(postgres.stop)
        postgres.start()
        url = postgres.database()

        def serve(home: Path, settings: str) -> str:
            port = free_port()
            home.mkdir(parents=True, exist_ok=True)
            proc = start_server(home, port, settings, wait_s=60)
            stack.callback(lambda: (proc.terminate(), proc.wait(timeout=30)))
            return f"http://127.0.0.1:{port}"

        sqlite = serve(Path(tmp) / "sqlite", models)
        shared = f'{models}\n[store]\nurl = "{url}"\n'
        replicas = [serve(Path(tmp) / f"pg{i}", shared) for i in (1, 2)]
        rows = []
        for name, bases in (
            ("1 replica, SQLite", [sqlite]),
            ("2 replicas, PostgreSQL (round-robin)", replicas),
        ):
            rec, seconds = asyncio.run(load(bases, args.clients, args.runs, args.rows))
            rows.append(load_row(name, rec, seconds))
            print(rows[-1], *rec.errors[:5], sep="\n  ")
        infos, wall = judged(replicas, args.judged_rows)
        time.sleep(1)  # the last lines of the judge's log
        figures, rate_text = rate_report(judge.times)
    table = "\n".join(
        [
            "| service | requests/s | p50 ms | p99 ms | run status p99 ms | requests | errors |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
    done = sum(info["progress"]["done"] for info in infos)
    states = ", ".join(info["state"] for info in infos)
    judged_text = (
        f"Judged: 2 runs x {args.judged_rows} rows ({done} rows done, runs {states}) in "
        f"{wall / 60:.1f} minutes wall time, {figures['requests'] / max(done, 1):.2f} judge "
        f"requests per row; {rate_text}."
    )
    load_text = (
        f"Load: {args.clients} concurrent clients x {args.runs} runs of {args.rows} rows x 3 "
        f"retrieval metrics, each server with {args.workers} run workers; the same mix against "
        "each column, one after the other in one run of the bench."
    )
    print(load_text, table, judged_text, sep="\n")
    failed = figures["most_in_60s"] > LIMIT or done != 2 * args.judged_rows
    busy = ": other work was running, so the load figures are noisy" if loadavg[0] > 1 else ""
    if not args.no_write and not failed:
        body = (
            f"{__doc__.split(chr(10) + chr(10))[1]}\n\n{load_text}\n\n{table}\n\n"
            f"{judged_text}\n\n{machine_line('fastapi', 'uvicorn', 'httpx', 'psycopg')} "
            f"Loopback, one machine: the clients, the judge, PostgreSQL and the servers share "
            f"its {os.cpu_count()} cores, so a second replica adds no cores here (load average "
            f"{loadavg[0]:.1f} when the bench started{busy}).\n"
        )
        write_section(
            "service_replicas", "Replicas: SQLite vs PostgreSQL, shared judge limit", body
        )
    if figures["most_in_60s"] > LIMIT:
        raise SystemExit(f"the judge saw {figures['most_in_60s']} requests in 60 s: over {LIMIT}")
    if done != 2 * args.judged_rows:
        raise SystemExit(f"{done} of {2 * args.judged_rows} judged rows done ({states})")


if __name__ == "__main__":
    main()
