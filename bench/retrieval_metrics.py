"""Retrieval metrics, side by side: ragmeter vs pytrec_eval (trec_eval) vs ranx, in one run.

20,000 queries x 100 retrieved ids; metrics mrr, ndcg@10, map@100, precision@10, recall@100,
hit_rate@10. Every library starts from plain Python structures, its own native input form:
ragmeter from ranked id lists and relevant id lists, pytrec_eval and ranx from the TREC-style
``{qid: {doc: score}}`` run and ``{qid: {doc: rel}}`` qrels dicts (building those dicts from the
lists is timed separately, as "dict build"). Each timing is the median of several repeats after a
warm-up (ranx compiles with numba on first use). Means are checked to agree to 1e-9.

Run: ``.venv/bin/python bench/retrieval_metrics.py``; it rewrites its section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

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
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()

    import pytrec_eval
    import ranx

    retrieved, relevant = make_data(args.queries, args.depth, seed=42)
    build_s, (run, qrels) = timed(lambda: to_trec(retrieved, relevant), 1)

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
        },
        args.repeats,
    )
    ours_s, ours_med, ours = measured["ragmeter"]
    trec_s, trec_med, trec = measured["pytrec_eval"]
    ranx_s, ranx_med, ranx_means = measured["ranx"]

    rows = []
    for name in OURS:
        ours_mean = float(np.mean(ours[name]))
        trec_mean = statistics.fmean(trec[str(q)][TREC[name]] for q in range(args.queries))
        ranx_mean = float(ranx_means[RANX[name]])
        if abs(ours_mean - trec_mean) > 1e-9:
            raise SystemExit(f"{name}: ragmeter {ours_mean} != trec_eval {trec_mean}")
        rows.append((name, ours_mean, trec_mean, ranx_mean))

    timing = [
        ("ragmeter `score_rankings` (from lists)", ours_s, ours_med),
        ("pytrec_eval `RelevanceEvaluator` + `evaluate` (from dicts)", trec_s, trec_med),
        ("ranx `Qrels/Run.from_dict` + `evaluate` (from dicts)", ranx_s, ranx_med),
    ]
    lines = [
        f"{args.queries:,} queries x {args.depth} retrieved ids; metrics "
        + ", ".join(f"`{m}`" for m in OURS)
        + f". {args.repeats} rounds after a warm-up, the implementations taking turns in each "
        "round, one process. The work is memory-bound and this machine's timings swing up to 3x "
        "from round to round under outside load, so the ratio is taken on each implementation's "
        "best round (its cost without interference); medians are shown too.",
        "",
        "| implementation | best s | median s | ragmeter faster by (best) | (median) |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, best, median in timing:
        lines.append(
            f"| {label} | {best:.3f} | {median:.3f} | {best / ours_s:.1f}x "
            f"| {median / ours_med:.1f}x |"
        )
    lines += [
        "",
        f"Building the TREC-style dicts from the lists takes a further {build_s:.3f} s "
        "(not counted for the peers above).",
        "",
        f"**Goal: at least 3x faster than pytrec_eval. Measured: {trec_s / ours_s:.1f}x "
        f"({'met' if trec_s / ours_s >= 3 else 'NOT met'}).**",
        "",
        "Means agree (ragmeter and trec_eval to 1e-9, checked by the script):",
        "",
        "| metric | ragmeter | trec_eval | ranx |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| `{n}` | {a:.6f} | {b:.6f} | {c:.6f} |" for n, a, b, c in rows]
    lines += [
        "",
        machine_line("pytrec-eval-terrier", "ranx", "numpy"),
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("retrieval_metrics", "Retrieval metrics vs pytrec_eval and ranx", text)


if __name__ == "__main__":
    main()
