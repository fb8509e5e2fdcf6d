"""The dashboard on big runs: Chromium's time to show each view of 100,000-result runs.

A real ``ragmeter serve`` (no keys, loopback) over a fresh store holding two runs of the same
50,000 rows x 2 retrieval metrics (hit_rate, mrr: 100,000 results each; the rows carry an
``id``, so the compare pairs them by it), the candidate worse on about a fifth of the rows.
Debian's Chromium, driven by Playwright, loads each view 20 times from a blank page and
times, by the page's own clock, navigation start to the frame that paints the view's content
(the rows of a table, the row's metrics, the compare's tables and scatter: each shown only
once the request behind it is answered). Median and p95 per view. Goal: p95 under 1 s for
every view on this machine.

Run: ``.venv/bin/python bench/dashboard.py`` (``--rows 5000 --loads 3`` for a quick check);
it rewrites its section of ``docs/benchmarks.md`` unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, sync_playwright

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from _serve import free_port, start_server

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
WORDS = [
    "workflow",
    "agent",
    "index",
    "retrieval",
    "chunk",
    "prompt",
    "model",
    "space",
    "embedding",
    "rerank",
    "graph",
]
GOAL_S = 1.0
#: rows per page of the Run view's table (static/run.js PAGE)
PAGE_ROWS = 50


def _rows(count: int, seed: int, worse: float) -> list[dict[str, Any]]:
    """Rows with an id, a query and ranked ids; ``worse`` of them rank the relevant id lower."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(6))
        rank = rng.choice([0, 0, 1, 2]) if rng.random() >= worse else 4
        retrieved = [f"d{i}-{k}" for k in range(5)]
        relevant = [retrieved[rank]] if i % 50 else []  # every 50th row: no relevant id
        out.append(
            {
                "id": f"q{i}",
                "query": f"How does the {words} of part {i} work?",
                "response": f"Part {i} uses the {words}.",
                "retrieved_ids": retrieved,
                "reference_ids": relevant,
            }
        )
    return out


def _stored_run(http: httpx.Client, name: str, rows: list[dict[str, Any]]) -> str:
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    files = {"file": (f"{name}.jsonl", body, "application/x-ndjson")}
    uploaded = http.post("/api/v2/serve/datasets", params={"name": name}, files=files).json()
    if not uploaded.get("success"):
        raise SystemExit(f"cannot upload {name}: {uploaded}")
    request: dict[str, Any] = {"scene_key": "dataset", "datasets_name": name}
    request["evaluate_metrics"] = ["hit_rate", "mrr"]
    answer = http.post("/api/v2/serve/evaluate/runs", json=request).json()
    if not answer.get("success"):
        raise SystemExit(f"cannot start the run over {name}: {answer}")
    run_id: str = answer["data"]["run_id"]
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        info = http.get(f"/api/v2/serve/evaluate/runs/{run_id}").json()["data"]
        if info["state"] in ("done", "failed", "cancelled"):
            if info["state"] != "done":
                raise SystemExit(f"run over {name} ended {info['state']}: {info.get('error')}")
            return run_id
        time.sleep(0.5)
    raise SystemExit(f"run over {name} did not finish")


@dataclass
class _Served:
    """A ``ragmeter serve`` over the two runs (and two small ones), restartable."""

    home: Path
    port: int
    settings: str
    base: str = ""
    candidate: str = ""
    small: tuple[str, str] = ("", "")
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = start_server(self.home, self.port, self.settings, key=None)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(30)
            self.process = None

    def restart_warm(self) -> None:
        """A new server process, its code warmed by comparing the two small runs: what it
        keeps of the big runs is gone, what every first request pays is not timed."""
        self.stop()
        self.start()
        path = f"{self.url}/api/v2/serve/evaluate/runs/{self.small[0]}/compare/{self.small[1]}"
        for tail in ("", "/rows?metric=mrr", "/scatter?metric=mrr"):
            httpx.get(path + tail, timeout=60).raise_for_status()


@contextmanager
def _served(rows: int) -> Iterator[_Served]:
    """The server with its baseline, candidate and two small runs stored."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = f"[server]\nmax_rows = {rows}\nmax_upload_mb = 200\n"
        served = _Served(Path(tmp), free_port(), settings)
        served.start()
        try:
            with httpx.Client(base_url=served.url, timeout=600) as http:
                served.base = _stored_run(http, "base", _rows(rows, 1, 0.0))
                served.candidate = _stored_run(http, "candidate", _rows(rows, 1, 0.2))
                small = (_stored_run(http, f"small-{n}", _rows(50, n, 0.2)) for n in (1, 2))
                served.small = (next(small), next(small))
            yield served
        finally:
            served.stop()


#: in the page before its own scripts: the first time each watched selector matches, as
#: milliseconds since navigation start, taken at the next animation frame (the frame that
#: paints it). Playwright's own wait polls at growing intervals (up to 500 ms apart), so
#: it says when it looked, not when the view was there.
_WATCH = """
window.__shown = {};
new MutationObserver(() => {
  for (const s of SELECTORS) {
    if (!(s in window.__shown) && document.querySelector(s)) {
      window.__shown[s] = null;
      requestAnimationFrame(() => { window.__shown[s] = performance.now(); });
    }
  }
}).observe(document, { subtree: true, childList: true });
"""


def _timed_loads(
    page: Page, url: str, ready: str, loads: int, before: Callable[[], None] | None = None
) -> list[float]:
    """Seconds from navigation start to the last of ``ready``'s selectors (joined by
    " && ") painted, by the page's own clock, ``loads`` times (plus a warm-up), each from
    a blank page (after ``before``); the view's own errors stop the benchmark."""
    selectors = ready.split(" && ")
    seconds = []
    for n in range(loads + 1):
        if before is not None:
            before()
        page.goto("about:blank")
        page.goto(url)
        for selector in selectors:
            page.wait_for_selector(selector, timeout=60_000)
        page.wait_for_function(
            "(s) => s.every((x) => typeof window.__shown[x] === 'number')", arg=selectors
        )
        shown = page.evaluate("(s) => Math.max(...s.map((x) => window.__shown[x]))", selectors)
        if page.locator(".error").count():
            raise SystemExit(f"{url}: {page.locator('.error').first.inner_text()}")
        if n:
            seconds.append(shown / 1000)
    return seconds


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


#: the view timed again on a server that has just started (its code warmed, nothing of the
#: two runs kept): what a user opening a comparison for the first time waits
FIRST_COMPARE = "compare view, first time (a new server: nothing kept)"


def views(url: str, base: str, candidate: str, rows: int) -> list[tuple[str, str, str]]:
    """(name, address, what shows the view is ready) of each view timed."""
    run = f"{url}/#/runs/{candidate}"
    table = "table.rows tbody tr"
    middle = max(1, rows // PAGE_ROWS // 2)  # a page in the middle of the table
    return [
        ("run view (summary, histograms, first page of rows)", run, table),
        (
            f"row table: page {middle} by mrr, lowest first",
            f"{run}?metric=mrr&sort=score&page={middle}",
            table,
        ),
        ("row table: failures first", f"{run}?failures=1", table),
        ("row table: mrr below 0.5", f"{run}?metric=mrr&below=0.5", table),
        ("row table: text search", f"{run}?q=rerank%20graph", table),
        ("row view (one row, every metric)", f"{run}/rows/{rows // 2}", "section.result-card"),
        (
            "compare view (paired statistics, regressions first, scatter)",
            f"{url}/#/compare/{base}/{candidate}?metric=mrr",
            "table.pairs tbody tr && #compare-scatter svg && table.compare-metrics tbody tr",
        ),
        (
            FIRST_COMPARE,
            f"{url}/#/compare/{base}/{candidate}",
            "table.pairs tbody tr && #compare-scatter svg && table.compare-metrics tbody tr",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    results: list[tuple[str, float, float]] = []
    with _served(args.rows) as served, sync_playwright() as play:
        browser = play.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        timed = views(served.url, served.base, served.candidate, args.rows)
        watched = sorted({s for _, _, ready in timed for s in ready.split(" && ")})
        page.add_init_script(_WATCH.replace("SELECTORS", json.dumps(watched)))
        for name, address, ready in timed:
            before = served.restart_warm if name == FIRST_COMPARE else None
            seconds = _timed_loads(page, address, ready, args.loads, before)
            results.append((name, statistics.median(seconds), _p95(seconds)))
            print(f"{name}: median {results[-1][1]:.3f} s, p95 {results[-1][2]:.3f} s")
        browser.close()
    lines = ["| view | median | p95 | goal p95 < 1 s |", "|---|---:|---:|---|"]
    for name, median, p95 in results:
        verdict = "met" if p95 < GOAL_S else "NOT met"
        lines.append(f"| {name} | {median:.3f} s | {p95:.3f} s | {verdict} |")
    body = (
        f"Two stored runs of {args.rows:,} rows x 2 metrics ({2 * args.rows:,} results each), "
        f"{args.loads} loads per view from a blank page in Chromium, navigation start to the "
        "frame that paints the view's content, by the page's clock. Finished runs' columns "
        "are kept by the server between requests; the first-time compare restarts the server "
        "before each load (its code warmed on two small runs), so nothing of the two runs is "
        "kept.\n\n" + "\n".join(lines) + "\n\n" + machine_line("playwright")
    )
    print(body)
    if not args.no_write:
        write_section("dashboard", "Dashboard views on 100,000-result runs", body)


if __name__ == "__main__":
    main()
