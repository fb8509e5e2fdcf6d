"""The ``views`` part of bench/scale.py: the API requests of the dashboard's Run, Row and
Compare views on two stored runs, timed over loopback on SQLite or PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from _serve import free_port, start_server

ROOT = Path(__file__).resolve().parents[1]
API = "/api/v2/serve/evaluate/runs"
#: rows per page of the Run and Compare views' tables (static/run.js, compare.js PAGE)
PAGE = 50
STORE_URL_ENV = "RAGMETER_STORE_URL"  # ragmeter.config.STORE_URL_ENV


@contextmanager
def store_url(kind: str) -> Iterator[str | None]:
    """None for SQLite (the data folder's own file); for PostgreSQL a new database on a
    throwaway server started as tests/pg.py starts the tests' (imported, not copied)."""
    if kind == "sqlite":
        yield None
        return
    sys.path.insert(0, str(ROOT))
    from tests.pg import PostgresServer, bindir

    binaries = bindir()
    if binaries is None:
        raise SystemExit("PostgreSQL is not installed: scripts/install.sh installs it")
    server = PostgresServer(binaries)
    server.start()
    try:
        yield server.database(migrated=True)
    finally:
        server.stop()


def _eval(data: Path, name: str, metrics: str, env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", metrics]
    done = subprocess.run(
        [*command, "--name", name], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"ragmeter eval {name} failed:\n{done.stderr[-2000:]}")


def _run_ids(url: str) -> dict[str, str]:
    listed = httpx.get(f"{url}{API}", params={"limit": 200}, timeout=60).json()["data"]
    items = listed["items"] if isinstance(listed, dict) else listed
    return {item["name"]: item["run_id"] for item in items}


def _requests(base: str, other: str, rows: int) -> dict[str, list[str]]:
    """The requests each view makes (static/run.js, row.js, compare.js), in order."""
    run, middle = f"{API}/{other}", rows // PAGE // 2 * PAGE
    pair = f"{API}/{base}/compare/{other}"
    return {
        "Run view (run, distribution, first page)": [
            run, f"{run}/distribution", f"{run}/rows?offset=0&limit={PAGE}",
        ],
        "Run view: middle page by mrr": [
            f"{run}/rows?offset={middle}&limit={PAGE}&metric=mrr&sort=score&order=asc",
        ],
        "Row view (one row, every metric)": [f"{run}/rows/{rows // 2}"],
        "Compare view (runs, compare, changes, pairs, scatter)": [
            f"{API}?limit=200", pair, f"{API}/{base}/changes/{other}",
            f"{pair}/rows?metric=mrr&offset=0&limit={PAGE}", f"{pair}/scatter?metric=mrr",
        ],
    }  # fmt: skip


def _time_view(
    http: httpx.Client, paths: list[str], times: int
) -> tuple[float, list[float], dict[str, float]]:
    """Seconds of the first round of ``paths`` (one after another), of ``times`` more, and
    the median seconds of each path over those."""
    rounds, each = [], {path: [] for path in paths}
    for _ in range(times + 1):
        started = time.perf_counter()
        for path in paths:
            asked = time.perf_counter()
            answer = http.get(path)
            each[path].append(time.perf_counter() - asked)
            if answer.status_code != 200 or not answer.json().get("success"):
                raise SystemExit(f"GET {path}: {answer.status_code} {answer.text[:300]}")
        rounds.append(time.perf_counter() - started)
    medians = {path: sorted(s[1:])[len(s[1:]) // 2] for path, s in each.items()}
    return rounds[0], rounds[1:], medians


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def part_views(
    results: int, stores: list[str], times: int, write_rows: Callable[..., None], metrics: str
) -> list[dict[str, Any]]:
    """Two stored runs of ``results`` results each (``results / 6`` rows, the candidate
    worse on a fifth of them) per store, then each view's requests timed ``times`` times."""
    rows = results // len(metrics.split(","))
    found = []
    with tempfile.TemporaryDirectory(prefix="ragmeter-scale-views-") as tmp:
        for name, worse in (("base", 0.0), ("candidate", 0.2)):
            write_rows(Path(tmp) / f"{name}.jsonl", rows, seed=2, worse=worse)
        for kind in stores:
            with store_url(kind) as url:
                found += _one_store(Path(tmp), kind, url, rows, times, metrics)
    return found


def _one_store(
    tmp: Path, kind: str, url: str | None, rows: int, times: int, metrics: str
) -> list[dict[str, Any]]:
    home = tmp / f"home-{kind}"
    home.mkdir()
    env = {**os.environ, "RAGMETER_HOME": str(home)}
    if url is not None:
        env[STORE_URL_ENV] = url
    for name in ("base", "candidate"):
        _eval(tmp / f"{name}.jsonl", name, metrics, env)
    saved = os.environ.get(STORE_URL_ENV)
    if url is not None:
        os.environ[STORE_URL_ENV] = url  # start_server passes the environment on
    port = free_port()
    server = start_server(home, port, f"[server]\nmax_rows = {rows}\n", key=None)
    try:
        return _time_views(f"http://127.0.0.1:{port}", kind, rows, times, len(metrics.split(",")))
    finally:
        server.terminate()
        server.wait(30)
        os.environ.pop(STORE_URL_ENV, None)
        if saved is not None:
            os.environ[STORE_URL_ENV] = saved


def _time_views(url: str, kind: str, rows: int, times: int, metrics: int) -> list[dict[str, Any]]:
    """Each view's requests timed on the server at ``url`` (its runs 'base', 'candidate')."""
    ids, found = _run_ids(url), []
    with httpx.Client(base_url=url, timeout=120) as http:
        for view, paths in _requests(ids["base"], ids["candidate"], rows).items():
            first, seconds, each = _time_view(http, paths, times)
            slowest = max(each, key=lambda path: each[path])
            label = slowest.split("?")[0].removeprefix(API) or "/"
            label = label.replace(ids["base"], "A").replace(ids["candidate"], "B")
            entry = {"store": kind, "results": rows * metrics, "view": view}
            entry |= {"slowest": f"GET runs{label}", "slowest_s": each[slowest]}
            entry |= {"first_s": first, "median_s": sorted(seconds)[len(seconds) // 2]}
            entry |= {"p95_s": p95(seconds), "requests": times, "load": list(os.getloadavg())}
            found.append(entry)
            print(f"{kind} {view}: first {first:.3f} s, p95 {entry['p95_s']:.3f} s", flush=True)
    return found
