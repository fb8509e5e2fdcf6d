"""Comparing two runs: ``compare_scores`` on two runs of 100,000 rows x 6 metrics, as the
dashboard's compare view and ``GET /runs/{id}/compare/{other}`` call it.

Each run is the list of (query, metric, score) tuples ``RunStore.scores`` returns, every query
a separate string object as a database hands it over. Timed: the whole comparison (pairing
rows, the statistics, the answer models), and the statistics alone (``compare_paired`` on the
six arrays of differences). Sizes: 100,000 rows (the analytic routes) and just below
``ANALYTIC_FROM`` (the Monte-Carlo routes' worst case). Median and max of several repeats.
Reading the runs from the store is not included.

Run: ``.venv/bin/python bench/compare_runs.py`` (``--rows 2000`` for a quick check); it
rewrites its section of ``docs/benchmarks.md`` unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from ragmeter.reports.stats import ANALYTIC_FROM, RESAMPLES, compare_paired
from ragmeter.runs.views.compare import compare_scores

METRICS = [f"metric_{i}" for i in range(6)]
Row = tuple[str, str, float | None]


def _runs(rows: int, seed: int) -> tuple[list[Row], list[Row]]:
    """Base and candidate: scores in [0, 1], the candidate shifted on two metrics, 1% nulls."""
    rng = np.random.default_rng(seed)
    truth = rng.random((rows, len(METRICS)))
    shift = np.array([0.0, -0.01, 0.0, 0.02, 0.0, 0.0])
    base_scores = np.clip(truth + rng.normal(0, 0.1, truth.shape), 0, 1)
    other_scores = np.clip(truth + shift + rng.normal(0, 0.1, truth.shape), 0, 1)
    out: list[list[Row]] = []
    for scores in (base_scores, other_scores):
        nulls = rng.random(scores.shape) < 0.01
        run: list[Row] = []
        for i in range(rows):
            for j, metric in enumerate(METRICS):
                query = "".join(["what does row ", str(i), " ask about the corpus?"])
                run.append((query, metric, None if nulls[i, j] else float(scores[i, j])))
        out.append(run)
    return out[0], out[1]


def _timed(work: Callable[[], object], repeats: int) -> tuple[float, float]:
    work()  # warm-up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), max(seconds)


def _measure(rows: int, repeats: int) -> str:
    base, other = _runs(rows, seed=rows)
    whole = _timed(lambda: compare_scores(base, other), repeats)
    rng = np.random.default_rng(0)
    diffs = {m: rng.normal(0, 0.14, rows) for m in METRICS}
    alone = _timed(lambda: compare_paired(diffs), repeats)
    answer = compare_scores(base, other)
    routes = f"{answer[0].ci_method} / {answer[0].p_method}"
    verdicts = ", ".join(c.verdict or "-" for c in answer)
    return (
        f"| {rows:,} x {len(METRICS)} | {routes} | {whole[0] * 1000:.0f} / {whole[1] * 1000:.0f}"
        f" | {alone[0] * 1000:.0f} / {alone[1] * 1000:.0f} | {verdicts} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    lines = [
        "| rows x metrics | CI / test route | whole comparison, ms (median / max) "
        "| statistics alone, ms (median / max) | verdicts |",
        "|---|---|---|---|---|",
    ]
    for rows in sorted({args.rows, ANALYTIC_FROM - 1}, reverse=True):
        lines.append(_measure(rows, args.repeats))
        print(lines[-1])
    body = (
        f"Two runs of (query, metric, score) tuples as the store returns them; candidate "
        f"0.01 worse on metric_1 and 0.02 better on metric_3, noise sd 0.1 per score, 1% "
        f"nulls. Below {ANALYTIC_FROM:,} pairs the routes are Monte-Carlo ({RESAMPLES:,} "
        f"sign-flip draws; for the bootstrap at least that many, and enough for ~50 in each "
        f"tail of a 1 - 0.05/6 interval: 12,000); from there on analytic (ABC interval, "
        f"normal sign-flip law). Intervals and p-values are Bonferroni-corrected across the "
        f"6 metrics (95% family-wise). "
        f"{args.repeats} repeats after a warm-up. {machine_line('numpy')}\n\n" + "\n".join(lines)
    )
    if not args.no_write:
        title = "Comparing two runs (family-wise statistics, Bonferroni)"
        write_section("compare_runs", title, body)


if __name__ == "__main__":
    main()
