"""A large stored dataset through ``ragmeter serve``: upload a CSV of 10^6 rows
(POST /datasets), then time GET /datasets, GET /datasets/{name} and a page of 100 rows at
the start and at the end of the dataset (GET /datasets/{name}/rows). Listing and finding
datasets should not depend on how many rows a stored dataset holds; a page should cost the
same wherever it starts.

The server is a real subprocess with its own data folder (SQLite) and an API key, its
``[server] max_rows`` and ``max_upload_mb`` raised to take the file. ``--baseline SRC``
measures another checkout's ``src`` folder the same way in the same run (the code before a
change), so both columns come from one machine at one time.

Run: ``.venv/bin/python bench/stored_datasets.py [--baseline /path/to/old/src]``; it rewrites its
section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from _serve import KEY, free_port, start_server

NAME = "big"
PAGE = 100


def write_csv(path: Path, rows: int) -> None:
    """``rows`` rows of a query, an answer and a reference, about 100 bytes each."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["query", "response", "reference"])
        for i in range(rows):
            out.writerow([f"question {i} about AWEL", f"answer {i} from the app", f"truth {i}"])


def peak_mb(pid: int) -> float:
    """The process's peak resident memory (Linux ``VmHWM``), NaN where it cannot be read."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return float("nan")
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), None)
    return int(line.split()[1]) / 1000 if line else float("nan")


def timed(http: httpx.Client, path: str, repeat: int, **params: int) -> float:
    """Median seconds of ``repeat`` GETs of ``path`` (each must succeed)."""
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = http.get(path, params=params)
        seconds.append(time.perf_counter() - started)
        if response.status_code != 200 or not response.json()["success"]:
            raise SystemExit(f"GET {path}: {response.status_code} {response.text[:300]}")
    return statistics.median(seconds)


def measure(src: str | None, data: Path, rows: int, repeat: int) -> dict[str, float]:
    """Seconds of each request against a server running ``src`` (None: this checkout)."""
    with tempfile.TemporaryDirectory(prefix="ragmeter-bench-") as tmp:
        port = free_port()
        server = start_server(
            Path(tmp),
            port,
            f"[server]\nmax_rows = {rows}\nmax_upload_mb = {max(20, rows // 5000)}\n",
            src,
        )
        base = f"http://127.0.0.1:{port}/api/v2/serve"
        headers = {"Authorization": f"Bearer {KEY}"}
        try:
            with httpx.Client(base_url=base, headers=headers, timeout=3600) as http:
                started = time.perf_counter()
                with data.open("rb") as handle:
                    files = {"file": ("big.csv", handle)}
                    stored = http.post("/datasets", files=files, data={"name": NAME}).json()
                upload = time.perf_counter() - started
                if not stored["success"] or stored["data"]["row_count"] != rows:
                    raise SystemExit(f"upload failed: {stored}")
                http.post("/datasets", files={"file": ("small.jsonl", b'{"query": "q"}\n')})
                out = {
                    "upload": upload,
                    "list": timed(http, "/datasets", repeat),
                    "get": timed(http, f"/datasets/{NAME}", repeat),
                    "first page": timed(http, f"/datasets/{NAME}/rows", repeat, limit=PAGE),
                    "last page": timed(
                        http, f"/datasets/{NAME}/rows", repeat, offset=rows - PAGE, limit=PAGE
                    ),
                }
            out["server peak MB"] = peak_mb(server.pid)
            files = Path(tmp).glob("ragmeter.db*")  # the database and its write-ahead log
            out["store MB"] = sum(path.stat().st_size for path in files) / 1e6
        finally:
            server.terminate()
            server.wait(timeout=60)
    return out


def table(after: dict[str, float], before: dict[str, float] | None) -> str:
    lines = ["| request | before | after |", "|---|---:|---:|"]
    if before is None:
        lines = ["| request | after |", "|---|---:|"]
    labels = {
        "upload": "POST /datasets (upload, s)",
        "list": "GET /datasets (s)",
        "get": f"GET /datasets/{NAME} (s)",
        "first page": f"GET /datasets/{NAME}/rows, first {PAGE} (s)",
        "last page": f"GET /datasets/{NAME}/rows, last {PAGE} (s)",
        "store MB": "store file (MB)",
        "server peak MB": "server's peak memory (MB)",
    }
    for key, label in labels.items():
        values = [after[key]] if before is None else [before[key], after[key]]
        cells = [f"{value:.3f}" for value in values]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="GETs of each kind (median)")
    parser.add_argument("--baseline", help="a src folder of the code to compare with")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragmeter-bench-data-") as tmp:
        data = Path(tmp) / "big.csv"
        write_csv(data, args.rows)
        before = measure(args.baseline, data, args.rows, args.repeat) if args.baseline else None
        after = measure(None, data, args.rows, args.repeat)
    result = table(after, before)
    summary = (
        f"One dataset of {args.rows:,} rows and one of 1 row stored; each GET is the median "
        f"of {args.repeat}."
    )
    print(summary)
    print(result)
    if not args.no_write:
        compared = (
            " `before` is the checkout given as `--baseline` (rows kept as one JSON array per "
            "dataset), `after` this one (one row per row in `dataset_rows`).\n\n"
            if before
            else ""
        )
        body = (
            f"{__doc__.split(chr(10) + chr(10))[1]}\n\n{summary}{compared}{result}\n\n"
            f"{machine_line('sqlalchemy', 'fastapi', 'httpx')} Loopback, one machine.\n"
        )
        write_section("datasets", "A stored dataset of a million rows", body)


if __name__ == "__main__":
    main()
