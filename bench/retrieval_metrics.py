"""Retrieval metrics, side by side: ragmeter vs pytrec_eval (trec_eval) vs ranx, in one run.

20,000 queries x 100 retrieved ids; metrics mrr, ndcg@10, map@100, precision@10, recall@100,
hit_rate@10. The goal is on what a user waits for: ``ragmeter.evaluate(rows, metrics)`` from a
list of dicts (rows checked, results kept per row x metric) against pytrec_eval from its own
input, the TREC-style ``{qid: {doc: score}}`` run and ``{qid: {doc: rel}}`` qrels dicts: at most
0.5x pytrec_eval's time, best of 5 rounds, the implementations taking turns in each round. Both
binary qrels (``reference_ids``) and graded ones (``reference_relevance``, grades 0-3) are
timed. ``score_rankings`` (the batch API from lists) and ranx are shown for reference; a JSONL
file of the same rows is timed too. A further run evaluates 1,000,000 rows (dicts) in a child
process, which reports its time and peak memory (VmHWM). Means are checked to agree with
trec_eval to 1e-9 on every path.

Run: ``.venv/bin/python bench/retrieval_metrics.py``; it rewrites its section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import ragmeter
from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from ragmeter.metrics import score_rankings

OURS = ["mrr", "ndcg@10", "map@100", "precision@10", "recall@100", "hit_rate@10"]
TREC = {
    "mrr": "recip_rank",
    "ndcg@10": "ndcg_cut_10",
    "map@100": "map_cut_100",
    "precision@10": "P_10",
    "recall@100": "recall_100",
    "hit_rate@10": "success_10",
}
RANX = {
    "mrr": "mrr",
    "ndcg@10": "ndcg@10",
    "map@100": "map@100",
    "precision@10": "precision@10",
    "recall@100": "recall@100",
    "hit_rate@10": "hit_rate@10",
}


def make_data(queries: int, depth: int, seed: int) -> tuple[list[list[str]], list[list[str]]]:
    """Ranked lists of ``depth`` ids from a 50,000-doc pool; 1-12 relevant ids per query, about
    half of them retrieved at random ranks."""
    rng = random.Random(seed)
    pool = [f"doc{i:06d}" for i in range(50_000)]
    retrieved, relevant = [], []
    for _ in range(queries):
        ranked = rng.sample(pool, depth)
        n_rel = rng.randint(1, 12)
        hits = rng.sample(ranked, rng.randint(0, n_rel))
        misses = rng.sample(pool, n_rel - len(hits))
        retrieved.append(ranked)
        relevant.append(list(dict.fromkeys(hits + misses)))
    return retrieved, relevant


def as_rows(retrieved: list[list[str]], relevant: list[list[str]]) -> list[dict[str, Any]]:
    """The rows a user hands ``ragmeter.evaluate``."""
    return [
        {"query": f"query {q}", "retrieved_ids": ranked, "reference_ids": rel}
        for q, (ranked, rel) in enumerate(zip(retrieved, relevant, strict=True))
    ]


def graded(
    relevant: list[list[str]], retrieved: list[list[str]], seed: int
) -> list[dict[str, int]]:
    """Graded qrels of the same relevant ids: grades 1-3, and two retrieved ids judged not
    relevant (grade 0) per query, as pooled TREC qrels have."""
    rng = random.Random(seed)
    out = []
    for rel, ranked in zip(relevant, retrieved, strict=True):
        grades = {doc: 0 for doc in rng.sample(ranked, 2) if doc not in rel}
        grades.update((doc, rng.randint(1, 3)) for doc in rel)
        out.append(grades)
    return out


def as_graded_rows(
    retrieved: list[list[str]], grades: list[dict[str, int]]
) -> list[dict[str, Any]]:
    """The rows a user hands ``ragmeter.evaluate`` for graded relevance."""
    return [
        {"query": f"query {q}", "retrieved_ids": ranked, "reference_relevance": judged}
        for q, (ranked, judged) in enumerate(zip(retrieved, grades, strict=True))
    ]


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


def evaluate_means(source: Any) -> dict[str, float]:
    """``ragmeter.evaluate`` on ``source`` (rows or a path); each metric's mean."""
    report = ragmeter.evaluate(source, OURS)
    return {
        name: statistics.fmean(s for s in report.scores(name) if s is not None) for name in OURS
    }


def make_many(queries: int, depth: int, seed: int) -> tuple[list[list[str]], list[list[str]]]:
    """Like ``make_data``, faster for a million rows: each ranked list is an arithmetic run
    through the pool (distinct ids), relevant ids as in ``make_data``."""
    rng = np.random.default_rng(seed)
    pool = [f"doc{i:06d}" for i in range(50_000)]
    starts = rng.integers(0, 50_000, queries)
    strides = rng.integers(1, 50_000 // depth, queries)
    n_rel = rng.integers(1, 13, queries)
    steps = np.arange(depth)
    retrieved, relevant = [], []
    for start, stride, count in zip(starts.tolist(), strides.tolist(), n_rel.tolist(), strict=True):
        ranked = [pool[j] for j in ((start + stride * steps) % 50_000).tolist()]
        hits = ranked[: count // 2 * 2 : 2]
        misses = [pool[j] for j in rng.integers(0, 50_000, count - len(hits)).tolist()]
        retrieved.append(ranked)
        relevant.append(list(dict.fromkeys(hits + misses)))
    return retrieved, relevant


def _rss_kib(field: str = "VmRSS") -> int:
    """This process's resident memory (KiB) from /proc: now (VmRSS) or its peak (VmHWM,
    which unlike ``ru_maxrss`` does not inherit the parent's peak across exec); the peak
    from ``ru_maxrss`` where there is no /proc."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def million_child(queries: int, depth: int) -> None:
    """Run in a child process: evaluate ``queries`` rows of dicts, print its time and memory:
    resident after the imports and a warm-up, after making the rows, and the peak (VmHWM)."""
    ragmeter.evaluate(as_rows(*make_many(10, depth, seed=1)), OURS)  # imports, first use
    base = _rss_kib()
    retrieved, relevant = make_many(queries, depth, seed=7)
    rows = as_rows(retrieved, relevant)
    del retrieved, relevant
    data = _rss_kib()
    start = time.perf_counter()
    report = ragmeter.evaluate(rows, OURS)
    seconds = time.perf_counter() - start
    peak = _rss_kib("VmHWM")
    means = {name: float(np.nanmean(np.array(report.scores(name), dtype=float))) for name in OURS}
    print(json.dumps({"rows": len(rows), "seconds": seconds, "base_kib": base,
                      "data_kib": data, "peak_kib": peak, "means": means}))  # fmt: skip


def run_million(queries: int, depth: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--million-child", str(queries), "--depth", str(depth)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def to_trec(
    retrieved: list[list[str]], relevant: list[list[str]]
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    run = {
        str(q): {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
        for q, ranked in enumerate(retrieved)
    }
    qrels = {str(q): dict.fromkeys(rel, 1) for q, rel in enumerate(relevant)}
    return run, qrels


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    result = fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def interleaved(
    fns: dict[str, Callable[[], Any]], repeats: int
) -> dict[str, tuple[float, float, Any]]:
    """(best, median, result) of each function, the functions taking turns within every round
    so that machine noise falls on all of them alike. One warm-up call each (ranx compiles
    with numba on first use)."""
    results = {name: fn() for name, fn in fns.items()}
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {name: (min(times[name]), statistics.median(times[name]), results[name]) for name in fns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--million", type=int, default=1_000_000, help="rows of the large run")
    parser.add_argument("--million-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if args.million_child:
        million_child(args.million_child, args.depth)
        return

    import pytrec_eval
    import ranx

    retrieved, relevant = make_data(args.queries, args.depth, seed=42)
    build_s, (run, qrels) = timed(lambda: to_trec(retrieved, relevant), 1)
    rows = as_rows(retrieved, relevant)
    grades = graded(relevant, retrieved, seed=43)
    graded_rows = as_graded_rows(retrieved, grades)
    graded_qrels = {str(q): judged for q, judged in enumerate(grades)}
    folder = tempfile.TemporaryDirectory()
    jsonl = write_jsonl(rows, Path(folder.name) / "rows.jsonl")

    measures = set(TREC.values())

    def run_ranx() -> dict[str, float]:
        result: dict[str, float] = ranx.evaluate(
            ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run), list(RANX.values())
        )
        return result

    measured = interleaved(
        {
            "ragmeter": lambda: score_rankings(retrieved, relevant, OURS),
            "pytrec_eval": lambda: pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run),
            "ranx": run_ranx,
            "evaluate_dicts": lambda: evaluate_means(rows),
            "evaluate_jsonl": lambda: evaluate_means(jsonl),
            "pytrec_eval_graded": lambda: pytrec_eval.RelevanceEvaluator(
                graded_qrels, measures
            ).evaluate(run),
            "evaluate_graded": lambda: evaluate_means(graded_rows),
        },
        args.repeats,
    )
    folder.cleanup()
    big = run_million(args.million, args.depth) if args.million else None
    text = _section(args, measured, build_s, big)
    print(text)
    if not args.no_write:
        write_section("retrieval_metrics", "Retrieval metrics vs pytrec_eval and ranx", text)


def _means(
    queries: int, measured: dict[str, tuple[float, float, Any]]
) -> list[tuple[str, float, float, float]]:
    """Each metric's mean by ragmeter, trec_eval and ranx; SystemExit unless ragmeter's
    kernel and both user paths agree with trec_eval to 1e-9."""
    ours, trec, ranx_means = (measured[k][2] for k in ("ragmeter", "pytrec_eval", "ranx"))
    rows = []
    for name in OURS:
        ours_mean = float(np.mean(ours[name]))
        trec_mean = statistics.fmean(trec[str(q)][TREC[name]] for q in range(queries))
        for label, mean in (
            ("score_rankings", ours_mean),
            ("evaluate (dicts)", measured["evaluate_dicts"][2][name]),
            ("evaluate (JSONL)", measured["evaluate_jsonl"][2][name]),
        ):
            if abs(mean - trec_mean) > 1e-9:
                raise SystemExit(f"{name}: ragmeter {label} {mean} != trec_eval {trec_mean}")
        graded_trec = measured["pytrec_eval_graded"][2]
        graded_mean = statistics.fmean(graded_trec[str(q)][TREC[name]] for q in range(queries))
        if abs(measured["evaluate_graded"][2][name] - graded_mean) > 1e-9:
            raise SystemExit(f"{name}: ragmeter graded != trec_eval {graded_mean}")
        rows.append((name, ours_mean, trec_mean, float(ranx_means[RANX[name]])))
    return rows


def _section(
    args: argparse.Namespace,
    measured: dict[str, tuple[float, float, Any]],
    build_s: float,
    big: dict[str, Any] | None,
) -> str:
    ours_s, ours_med, _ = measured["ragmeter"]
    trec_s, trec_med, _ = measured["pytrec_eval"]
    ranx_s, ranx_med, _ = measured["ranx"]
    means = _means(args.queries, measured)
    timing = [
        ("ragmeter `score_rankings` (from lists)", ours_s, ours_med),
        ("pytrec_eval `RelevanceEvaluator` + `evaluate` (from dicts)", trec_s, trec_med),
        ("ranx `Qrels/Run.from_dict` + `evaluate` (from dicts)", ranx_s, ranx_med),
    ]
    lines = [
        f"{args.queries:,} queries x {args.depth} retrieved ids; metrics "
        + ", ".join(f"`{m}`" for m in OURS)
        + f". Best of {args.repeats} rounds after a warm-up, the implementations taking turns in "
        "each round, one process; medians are shown too. The work is memory-bound and this "
        "machine's timings swing from round to round under outside load, so ratios are taken on "
        "each side's best round (its cost without interference).",
        "",
        "**What a user waits for.** The goal is on `ragmeter.evaluate(rows, metrics)` from a "
        "list of dicts, end to end (every row checked, results kept per row x metric), against "
        "pytrec_eval evaluating from its own input dicts, not on an inner kernel:",
        "",
        *_user_path(measured, trec_s, trec_med, big),
        "",
        "For reference, the batch API from lists and the peers' own times (building pytrec_eval's "
        f"and ranx's dicts from the lists takes a further {build_s:.3f} s, not counted):",
        "",
        "| implementation | best s | median s |",
        "|---|---:|---:|",
    ]
    for label, best, median in timing:
        lines.append(f"| {label} | {best:.3f} | {median:.3f} |")
    lines += [
        "",
        "Means agree (`score_rankings` and every `evaluate` path, binary and graded, with "
        "trec_eval to 1e-9, checked by the script):",
        "",
        "| metric | ragmeter | trec_eval | ranx |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| `{n}` | {a:.6f} | {b:.6f} | {c:.6f} |" for n, a, b, c in means]
    lines += ["", machine_line("pytrec-eval-terrier", "ranx", "numpy")]
    return "\n".join(lines)


def _user_path(
    measured: dict[str, tuple[float, float, Any]],
    trec_s: float,
    trec_med: float,
    big: dict[str, Any] | None,
) -> list[str]:
    """The user path's table, its goal line and the million-row run."""
    dicts_s, dicts_med, _ = measured["evaluate_dicts"]
    jsonl_s, jsonl_med, _ = measured["evaluate_jsonl"]
    graded_s, graded_med, _ = measured["evaluate_graded"]
    graded_trec_s, graded_trec_med, _ = measured["pytrec_eval_graded"]
    ratio = dicts_s / trec_s
    graded_ratio = graded_s / graded_trec_s
    lines = [
        "| user path | best s | median s | pytrec_eval best s | x pytrec_eval (best) | (median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, best, median, peer, peer_med in (
        ("`ragmeter.evaluate` from a list of dicts (`reference_ids`)", dicts_s, dicts_med,
         trec_s, trec_med),
        ("`ragmeter.evaluate` from a list of dicts (graded `reference_relevance`)", graded_s,
         graded_med, graded_trec_s, graded_trec_med),
        ("`ragmeter.evaluate` from a JSONL file (read + parse + evaluate)", jsonl_s, jsonl_med,
         trec_s, trec_med),
    ):  # fmt: skip
        lines.append(
            f"| {label} | {best:.3f} | {median:.3f} | {peer:.3f} | {best / peer:.2f}x "
            f"| {median / peer_med:.2f}x |"
        )
    met = ratio <= 0.5 and graded_ratio <= 0.5
    lines += [
        "",
        f"**Goal: `evaluate` from dicts <= 0.5x pytrec_eval's time. Measured: {ratio:.2f}x "
        f"(binary), {graded_ratio:.2f}x (graded) ({'met' if met else 'NOT met'}).**",
    ]
    if big is not None:
        lines += [
            "",
            f"{big['rows']:,} rows (dicts, same metrics and depth) in a child process: "
            f"`evaluate` took {big['seconds']:.2f} s (after a warm-up call on 10 rows). Peak "
            f"memory (VmHWM): {big['peak_kib'] / 1024:,.0f} MiB; resident "
            f"{big['base_kib'] / 1024:,.0f} MiB after the imports and "
            f"{big['data_kib'] / 1024:,.0f} MiB once the rows were made, so `evaluate` "
            f"added at most {(big['peak_kib'] - big['data_kib']) / 1024:,.0f} MiB "
            f"({(big['peak_kib'] - big['data_kib']) * 1024 / big['rows']:,.0f} bytes a row).",
        ]
    return lines


if __name__ == "__main__":
    main()
