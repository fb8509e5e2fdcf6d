"""Deterministic agent metrics, side by side: ragmeter vs RAGAS 0.4.3, in one run.

10,000 seeded random trajectories (``ragmeter.testing.trajectories``: OpenAI chat messages
with tool calls, and the expected calls; missing, extra, repeated and reordered calls, wrong
and retyped arguments, nested values, and a few calls whose arguments are not an object).
The metrics RAGAS has without a judge: ToolCallAccuracy (strict and flexible order) and
ToolCallF1; ragmeter scores the same with ``tool_call_accuracy(mode=ragas)`` (equal to
RAGAS's, see tests/integration/test_agent_parity.py), its flexible form and ``tool_call_f1``.

- ragmeter: ``ragmeter.evaluate(rows, metrics)`` from the list of dicts, the whole user
  path (reading and checking the conversations, scoring, the report); and the scoring alone,
  each metric's batch pass over the loaded rows, awaited in one running event loop;
- RAGAS: its metric objects called as its docs show (``MultiTurnSample`` per row, ``await
  metric.multi_turn_ascore(sample)``), and its dataset path (``evaluate(EvaluationDataset,
  metrics)``), in its own environment (``.venv-agents``, made by
  bench/setup_agent_peers.sh); building the samples from the OpenAI messages (RAGAS does not
  read them) is timed apart. Rows RAGAS raises on are counted as errors.

Each timing is the best of 5 repeats (`--repeats`), the two sides alternating. ragmeter's other
deterministic agent metrics are timed too (no peer to compare).

Run: ``.venv/bin/python bench/agents.py``; it rewrites its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ragmeter
from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from ragmeter.datasets import load_dataset
from ragmeter.metrics import EvaluationContext, create_metric
from ragmeter.testing.trajectories import random_trajectories

ROOT = Path(__file__).resolve().parents[1]
PEERS_PYTHON = ROOT / ".venv-agents" / "bin" / "python"
#: ragmeter's spec -> RAGAS's metric (as _agent_peers.py names it)
HEAD_TO_HEAD = {
    "tool_call_accuracy(mode=ragas)": "tool_call_accuracy",
    "tool_call_accuracy(mode=ragas,strict_order=false)": "tool_call_accuracy(strict_order=false)",
    "tool_call_f1": "tool_call_f1",
}
OTHERS = [
    "tool_call_accuracy",
    "tool_call_accuracy(strict_order=false)",
    "tool_call_precision",
    "tool_call_recall",
    "argument_accuracy",
    "trajectory_match",
    "trajectory_match(mode=superset)",
    "tool_correctness",
    "tool_correctness(should_consider_ordering=true,input_parameters=true)",
]
#: the goal: at least this many times RAGAS's rows/s, end to end (what a user waits for)
GOAL = 5.0


def ours_end_to_end(rows: list[dict[str, Any]], metrics: list[str]) -> tuple[float, Any]:
    started = time.perf_counter()
    report = ragmeter.evaluate(rows, metrics)
    return time.perf_counter() - started, report


def ours_scoring(rows: list[dict[str, Any]], metrics: list[str]) -> dict[str, float]:
    """Each metric's batch pass over rows loaded once, alone (a fresh evaluation context
    per metric, so no metric reuses another's work); and under ``"together"`` all of them
    in one context, as one evaluation scores them (the calls read from the messages once)."""
    dataset = load_dataset(rows)
    out = {}
    loop = asyncio.new_event_loop()  # one running loop, as RAGAS's side awaits in one
    try:
        for spec in metrics:
            metric = create_metric(spec)
            started = time.perf_counter()
            loop.run_until_complete(metric.compute_rows(dataset, EvaluationContext()))
            out[spec] = time.perf_counter() - started
        built = [create_metric(spec) for spec in metrics]

        async def together() -> None:
            ctx = EvaluationContext()
            for metric in built:
                await metric.compute_rows(dataset, ctx)

        started = time.perf_counter()
        loop.run_until_complete(together())
        out["together"] = time.perf_counter() - started
    finally:
        loop.close()
    return out


def ragas_run(data: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(PEERS_PYTHON), str(ROOT / "bench" / "_agent_peers.py"), str(data), "--bench"],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"the RAGAS side failed:\n{done.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def rate(rows: int, seconds: float) -> str:
    return f"{rows / seconds:,.0f}"


def _verdict(e2e: float, scoring: float, alone: dict[str, float]) -> str:
    """The goal's line: met or not end to end, which is what a user waits for; the scoring
    alone and each metric alone are reported beside it, not judged."""
    line = (
        f"Goal: at least {GOAL:.0f}x RAGAS's rows/s end to end, from the list of dicts to the "
        f"scores: what a user waits for, not a kernel. {'Met' if e2e >= GOAL else 'Not met'}: "
        f"{e2e:.1f}x (reading and checking every conversation included, which RAGAS leaves to "
        f"its user). For comparison, not a goal: {scoring:.1f}x on the scoring alone"
    )
    slowest = min(alone, key=alone.__getitem__)
    line += f", {alone[slowest]:.1f}x for the slowest metric alone (`{slowest}`)."
    if slowest == "tool_call_f1":
        line += (
            " `tool_call_f1` makes a typed key of every call's arguments (1 == 1.0, key order "
            "irrelevant, true is not 1), where RAGAS compares Python values."
        )
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    args = parser.parse_args()
    if not (ROOT / ".venv-agents" / ".ready").exists():
        sys.exit("no .venv-agents: run `bash bench/setup_agent_peers.sh` first")
    rows = random_trajectories(args.rows, seed=args.seed)
    n = len(rows)
    specs = list(HEAD_TO_HEAD)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.json"
        data.write_text(json.dumps(rows), encoding="utf-8")
        ours_e2e: list[float] = []
        ours_alone: list[dict[str, float]] = []
        theirs: list[dict[str, Any]] = []
        report = None
        for _ in range(args.repeats):
            seconds, report = ours_end_to_end(rows, specs)
            ours_e2e.append(seconds)
            ours_alone.append(ours_scoring(rows, specs))
            theirs.append(ragas_run(data))
        others_e2e = min(ours_end_to_end(rows, OTHERS)[0] for _ in range(args.repeats))
        others_alone = [ours_scoring(rows, OTHERS) for _ in range(args.repeats)]
    assert report is not None
    nulls = sum(s is None for spec in specs for s in report.scores(spec))
    e2e = min(ours_e2e)
    alone = {spec: min(r[spec] for r in ours_alone) for spec in specs}
    ragas_metric = {
        spec: min(t["seconds"][name] for t in theirs) for spec, name in HEAD_TO_HEAD.items()
    }
    ragas_build = min(t["seconds"]["build"] for t in theirs)
    errors = theirs[0]["errors"]
    ragas_e2e = ragas_build + sum(ragas_metric.values())
    ragas_scoring = sum(ragas_metric.values())
    ours_scoring_total = min(r["together"] for r in ours_alone)
    ratio_e2e = ragas_e2e / e2e
    ratio_scoring = ragas_scoring / ours_scoring_total

    lines = [
        f"{n:,} trajectories (seed {args.seed}), the three metrics RAGAS has without a judge; "
        f"best of {args.repeats} alternating runs. Rows/s counts rows scored by all three "
        "metrics (one metric alone: rows per second of that metric). "
        + machine_line()
        + f" RAGAS {theirs[0]['ragas']} from `.venv-agents`. ragmeter is pure Python (its "
        "readers and metrics; orjson and numpy underneath), with Python's garbage collector "
        "as configured by default.",
        "",
        "| path | ragmeter s | ragmeter rows/s | RAGAS s | RAGAS rows/s | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| from the list of dicts to three scores per row (ragmeter: `evaluate`; RAGAS: "
        f"build samples + 3 metrics) | {e2e:.3f} | {rate(n, e2e)} | {ragas_e2e:.3f} | "
        f"{rate(n, ragas_e2e)} | **{ratio_e2e:.1f}x** |",
        f"| scoring alone, 3 metrics in one evaluation (rows already read) | "
        f"{ours_scoring_total:.3f} | "
        f"{rate(n, ours_scoring_total)} | {ragas_scoring:.3f} | {rate(n, ragas_scoring)} | "
        f"**{ratio_scoring:.1f}x** |",
    ]
    for spec, name in HEAD_TO_HEAD.items():
        lines.append(
            f"| `{spec}` vs `{name}` alone | {alone[spec]:.3f} | {rate(n, alone[spec])} | "
            f"{ragas_metric[spec]:.3f} | {rate(n, ragas_metric[spec])} | "
            f"{ragas_metric[spec] / alone[spec]:.1f}x |"
        )
    lines.append(
        f"| RAGAS: building `MultiTurnSample`s from the OpenAI messages | | | {ragas_build:.3f} "
        f"| {rate(n, ragas_build)} | |"
    )
    ragas_dataset = ragas_build + min(t["seconds"]["evaluate"] for t in theirs)
    lines.append(
        f"| the dataset paths: ragmeter `evaluate(rows, metrics)` vs RAGAS building samples + "
        f"`evaluate(EvaluationDataset(samples), metrics)` | {e2e:.3f} | {rate(n, e2e)} | "
        f"{ragas_dataset:.3f} | {rate(n, ragas_dataset)} | **{ragas_dataset / e2e:.1f}x** |"
    )
    crashed = errors["build"]
    lines += [
        "",
        f"RAGAS errors: {crashed:,} of {n:,} rows cannot become a `MultiTurnSample` (a call's "
        "arguments are valid JSON but not an object); on the samples it took, "
        + ", ".join(
            f"`{k}` raised {v:,} times" for k, v in errors.items() if k not in ("build", "evaluate")
        )
        + f", and its `evaluate` left {errors['evaluate']:,} scores empty"
        + f". ragmeter scored every row ({nulls} nulls).",
        "",
        _verdict(ratio_e2e, ratio_scoring, {s: ragas_metric[s] / alone[s] for s in specs}),
        "",
        "ragmeter's other deterministic agent metrics (no RAGAS counterpart):",
        "",
        "| metric | scoring s | rows/s |",
        "| --- | ---: | ---: |",
    ]
    for spec in OTHERS:
        best = min(r[spec] for r in others_alone)
        lines.append(f"| `{spec}` | {best:.3f} | {rate(n, best)} |")
    lines.append(
        f"| all {len(OTHERS)} through `evaluate` from the list of dicts | {others_e2e:.3f} | "
        f"{rate(n, others_e2e)} |"
    )
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        write_section("agents", "Deterministic agent metrics: ragmeter vs RAGAS", body)


if __name__ == "__main__":
    main()
