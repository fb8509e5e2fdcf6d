"""Load on ``ragmeter serve`` over loopback: concurrent clients each create small runs
(POST /runs), poll them to done (GET /runs/{id}) and page through their results
(GET /runs/{id}/results), while a probe times GET /health to show the event loop stays free.
Reports requests/s, p50/p99 latency per kind of request and the error count (goal: 0).

The server is a real subprocess with its own data folder and an API key; runs are the
``dataset`` scene (rows carry their retrieved and reference contexts) with three retrieval
metrics, so the numbers measure the service, not a model.

Run: ``.venv/bin/python bench/service_load.py``; it rewrites its section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from _serve import KEY, free_port, start_server


def run_body(client: int, index: int, rows: int) -> dict[str, Any]:
    return {
        "scene_key": "dataset",
        "evaluate_metrics": ["RetrieverHitRateMetric", "RetrieverMRRMetric", "ndcg@3"],
        "datasets": [
            {
                "query": f"client {client} run {index} question {i}",
                "retrieved_contexts": [f"c{i}", f"c{i + 1}", f"c{i + 2}"],
                "reference_contexts": [f"c{i + (i % 3)}"],
            }
            for i in range(rows)
        ],
        "parallel_num": 4,
    }


class Recorder:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []

    async def call(
        self, http: httpx.AsyncClient, kind: str, method: str, path: str, **kwargs: Any
    ) -> Any:
        started = time.perf_counter()
        try:
            response = await http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            self.errors.append(f"{kind}: {type(exc).__name__}")
            return None
        self.latency[kind].append(time.perf_counter() - started)
        body = response.json()
        if response.status_code >= 400 or not body.get("success"):
            self.errors.append(f"{kind}: {response.status_code} {body.get('err_msg')}")
            return None
        return body["data"]


async def one_client(
    http: httpx.AsyncClient, rec: Recorder, client: int, runs: int, rows: int
) -> int:
    finished = 0
    for index in range(runs):
        created = await rec.call(
            http, "create run", "POST", "/evaluate/runs", json=run_body(client, index, rows)
        )
        if created is None:
            continue
        run_id = created["run_id"]
        while True:
            info = await rec.call(http, "run status", "GET", f"/evaluate/runs/{run_id}")
            if info is None or info["state"] in ("done", "failed", "cancelled"):
                break
            await asyncio.sleep(0.05)
        if info is None or info["state"] != "done":
            rec.errors.append(f"run {run_id} ended {info and info['state']}")
            continue
        offset = 0
        while True:
            page = await rec.call(
                http, "results page", "GET", f"/evaluate/runs/{run_id}/results",
                params={"offset": offset, "limit": 5},
            )  # fmt: skip
            if page is None or not page["items"]:
                break
            offset += len(page["items"])
            if offset >= page["total"]:
                break
        finished += 1
    return finished


async def probe(http: httpx.AsyncClient, rec: Recorder, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await rec.call(http, "health (probe)", "GET", "/health")
        await asyncio.sleep(0.05)


async def load(base: str, clients: int, runs: int, rows: int) -> tuple[Recorder, float, int]:
    rec = Recorder()
    limits = httpx.Limits(max_connections=clients + 2)
    headers = {"Authorization": f"Bearer {KEY}"}
    async with (
        httpx.AsyncClient(
            base_url=f"{base}/api/v2/serve", headers=headers, limits=limits, timeout=60
        ) as http,
        httpx.AsyncClient(base_url=base, timeout=60) as health,
    ):
        stop = asyncio.Event()
        prober = asyncio.create_task(probe(health, rec, stop))
        started = time.perf_counter()
        done = await asyncio.gather(*(one_client(http, rec, c, runs, rows) for c in range(clients)))
        seconds = time.perf_counter() - started
        stop.set()
        await prober
    return rec, seconds, sum(done)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--runs", type=int, default=15, help="runs per client")
    parser.add_argument("--rows", type=int, default=5, help="rows per run")
    parser.add_argument("--workers", type=int, default=2, help="[server] workers")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragmeter-bench-") as tmp:
        port = free_port()
        server = start_server(Path(tmp), port, f"[server]\nworkers = {args.workers}\n", wait_s=30)
        try:
            rec, seconds, finished = asyncio.run(
                load(f"http://127.0.0.1:{port}", args.clients, args.runs, args.rows)
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
    api = [v for k, vs in rec.latency.items() if k != "health (probe)" for v in vs]
    lines = [
        "| request | count | p50 ms | p99 ms |",
        "|---|---:|---:|---:|",
    ]
    for kind in ("create run", "run status", "results page", "health (probe)"):
        values = rec.latency.get(kind, [])
        if values:
            p50, p99 = percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000
            lines.append(f"| {kind} | {len(values)} | {p50:.1f} | {p99:.1f} |")
    p50_all, p99_all = percentile(api, 0.5) * 1000, percentile(api, 0.99) * 1000
    lines.append(f"| all API requests | {len(api)} | {p50_all:.1f} | {p99_all:.1f} |")
    table = "\n".join(lines)
    probe_ms = [v * 1000 for v in rec.latency.get("health (probe)", [0.0])]
    summary = (
        f"{args.clients} concurrent clients x {args.runs} runs of {args.rows} rows x 3 metrics, "
        f"server with {args.workers} run workers: **{len(api) / seconds:.0f} requests/s**, "
        f"{finished / seconds:.1f} runs/s ({finished} runs finished) in {seconds:.1f} s, "
        f"**{len(rec.errors)} errors** (goal: 0). A /health probe every 50 ms during the "
        f"load answered in p50 {percentile(probe_ms, 0.5):.1f} ms, p99 "
        f"{percentile(probe_ms, 0.99):.1f} ms: runs are evaluated on worker threads, so the "
        "event loop keeps answering; what remains is the share of 2 cores and of the GIL "
        "that the workers and the load generator take."
    )
    print(summary)
    print(table)
    if rec.errors:
        print("errors:", *rec.errors[:10], sep="\n  ")
    if not args.no_write:
        body = (
            f"{__doc__.split(chr(10) + chr(10))[1]}\n\n{summary}\n\n{table}\n\n"
            f"{machine_line('fastapi', 'uvicorn', 'httpx')} Loopback, one machine: the "
            "clients and the server share its 2 cores.\n"
        )
        write_section("service_load", "Service under load (loopback)", body)
    if rec.errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
