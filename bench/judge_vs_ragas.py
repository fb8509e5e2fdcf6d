"""LLM-judged metrics, side by side: ragmeter vs ragas 0.4.3 against the same scripted judge.

The same 50 rows (a 3-sentence answer, 3-5 retrieved contexts, a reference) go through
ragmeter's five RAGAS metrics (faithfulness, answer_relevancy, context_precision,
context_recall, answer_correctness) and through ragas's own five, one after the other, each
against ``ragmeter judge-server`` at 200 ms per request (chat and embeddings) with 16
concurrent requests. The server counts the chat requests, embedding requests and prompt
tokens each side sends (tokens with the server's approximate word-level counter, the same for
both). ragmeter runs with the cache off, so every verdict is a real request.

ragas runs in its own environment, ``.venv-ragas`` (it pins openai 1.x): create it once with
``bash bench/setup_ragas.sh``. Then: ``.venv/bin/python bench/judge_vs_ragas.py``; it rewrites
its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _report import write_section  # bench/ is on sys.path when the script runs
from ragmeter import evaluate
from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.embeddings import embedder_from_config
from ragmeter.judge.from_config import judge_from_config
from ragmeter.testing import ScriptedJudgeServer

ROOT = Path(__file__).resolve().parents[1]
RAGAS_PYTHON = ROOT / ".venv-ragas" / "bin" / "python"
METRICS = "faithfulness,answer_relevancy,context_precision,context_recall,answer_correctness"


def run_ragmeter(server: ScriptedJudgeServer, data: Path, concurrency: int) -> dict[str, Any]:
    judge = judge_from_config(
        "scripted", base_url=server.url, max_concurrency=concurrency, cache=False
    )
    embedder = embedder_from_config("scripted", base_url=server.url)
    started = time.perf_counter()
    report = evaluate(data, METRICS, judge=judge, embedder=embedder, max_concurrency=concurrency)
    seconds = time.perf_counter() - started
    nulls = {name: sum(s is None for s in report.scores(name)) for name in report.metric_names}
    unexplained = sum(1 for r in report if r.score is None and not r.error)
    return {"seconds": seconds, "rows": report.rows, "null": nulls, "silent": unexplained}


def run_cli(server: ScriptedJudgeServer, data: Path, concurrency: int) -> dict[str, Any]:
    """``ragmeter eval`` as a user runs it, timed from outside (process start to exit): the
    default local embedder (the command runs it in a helper process of its own), a stored
    run, the judge cache off as above."""
    out = data.with_name("cli-results.jsonl")
    command = [str(ROOT / ".venv" / "bin" / "ragmeter"), "eval", str(data), "-m", METRICS]
    command += ["--judge-model", "scripted", "--judge-base-url", server.url, "--no-cache"]
    command += ["--max-concurrency", str(concurrency), "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"ragmeter eval failed:\n{done.stderr[-3000:]}")
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line]
    nulls: dict[str, int] = {}
    for line in lines:
        nulls[line["metric_name"]] = nulls.get(line["metric_name"], 0) + (line["score"] is None)
    silent = sum(1 for line in lines if line["score"] is None and not line["error"])
    rows = len({line["row_index"] for line in lines})
    return {"seconds": seconds, "rows": rows, "null": nulls, "silent": silent}


def run_ragas(server: ScriptedJudgeServer, data: Path, concurrency: int) -> dict[str, Any]:
    command = [str(RAGAS_PYTHON), str(ROOT / "bench" / "_ragas_side.py")]
    command += ["--url", server.url, "--data", str(data), "--workers", str(concurrency)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    if done.returncode != 0:
        sys.exit(f"ragas run failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    # ragas reports NaN without a reason: every NaN is a silent null
    result["null"] = result.pop("nan")
    result["silent"] = sum(result["null"].values())
    return result


def measured(name: str, run: Any, server: ScriptedJudgeServer, *args: Any) -> dict[str, Any]:
    server.reset()
    result = dict(run(server, *args))
    stats = server.snapshot()
    rows = result["rows"]
    result.update(
        name=name,
        chat_per_row=stats.get("chat_requests", 0) / rows,
        embed_per_row=stats.get("embedding_requests", 0) / rows,
        prompt_per_row=stats.get("prompt_tokens", 0) / rows,
        completion_per_row=stats.get("completion_tokens", 0) / rows,
        rows_per_s=rows / result["seconds"],
    )
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| | chat requests/row | embedding requests/row | prompt tokens/row | "
        "completion tokens/row | wall time | rows/s | nulls (silent) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        nulls = sum(r["null"].values())
        lines.append(
            f"| {r['name']} | {r['chat_per_row']:.2f} | {r['embed_per_row']:.2f} | "
            f"{r['prompt_per_row']:,.0f} | {r['completion_per_row']:,.0f} | {r['seconds']:.1f} s | "
            f"{r['rows_per_s']:.2f} | {nulls} ({r['silent']}) |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if not RAGAS_PYTHON.exists():
        sys.exit("no .venv-ragas: run `bash bench/setup_ragas.sh` first")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RAGMETER_HOME"] = tmp  # a throwaway store; the cache is off anyway
        data = Path(tmp) / "rows.jsonl"
        rows = synthetic_rows(args.rows)
        data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        with ScriptedJudgeServer(latency_ms=args.latency_ms) as server:
            ours = measured("ragmeter (fused)", run_ragmeter, server, data, args.concurrency)
            cli = measured(
                "`ragmeter eval` end to end (local embedder)", run_cli, server, data,
                args.concurrency,
            )  # fmt: skip
            peer = measured("ragas 0.4.3", run_ragas, server, data, args.concurrency)
    ragas_version = subprocess.run(
        [str(RAGAS_PYTHON), "-c", "import ragas; print(ragas.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    speedup = ours["rows_per_s"] / peer["rows_per_s"]
    end_to_end = cli["rows_per_s"] / peer["rows_per_s"]
    goals = [
        ("chat requests/row <= 3", ours["chat_per_row"] <= 3),
        ("prompt tokens/row <= 3,500", ours["prompt_per_row"] <= 3500),
        (f"rows/s >= 8x ragas ({speedup:.1f}x)", speedup >= 8),
        (f"`ragmeter eval` end to end >= 8x ragas ({end_to_end:.1f}x)", end_to_end >= 8),
        ("zero silent nulls", ours["silent"] == 0),
    ]
    body = (
        f"{args.rows} rows (3-sentence answer, 3-5 contexts, reference), five metrics, scripted "
        f"judge at {args.latency_ms:g} ms per request, {args.concurrency} concurrent requests. "
        f"ragmeter {version('ragmeter')} (judge over httpx {version('httpx')}), "
        f"ragas {ragas_version} "
        "(LangchainLLMWrapper over ChatOpenAI, OpenAIEmbeddings). Tokens are counted by the "
        "server with the same approximate word-level counter for both sides. Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs.\n\n"
        f"{table([ours, cli, peer])}\n\n"
        f"ragmeter is **{speedup:.1f}x** ragas's rows/s with "
        f"{peer['chat_per_row'] / ours['chat_per_row']:.1f}x fewer chat requests and "
        f"{peer['prompt_per_row'] / ours['prompt_per_row']:.1f}x fewer prompt tokens per row; "
        "the command line, timed from process start to exit with the local embedder loaded "
        "(in a helper process the command starts), "
        f"is **{end_to_end:.1f}x**.\n\n"
        + "\n".join(f"- {'met' if ok else 'NOT met'}: {goal}" for goal, ok in goals)
        + "\n\nragas asks for 3 generations per row for answer_relevancy, but through "
        "LangchainLLMWrapper it receives one (it warns and proceeds), so its figures above "
        "are slightly lower than with a client that returns all three. A NaN from ragas has no "
        "reason attached, so each one counts as silent; ragmeter's nulls each carry an `error`.\n"
    )
    print(body)
    if not args.no_write:
        write_section("judge_vs_ragas", "LLM-judged metrics: ragmeter vs ragas", body)


if __name__ == "__main__":
    main()
