"""Test set generation on DB-GPT's docs (``en/`` and ``zh/``) with the scripted judge.

For each language a space is built (markdown-header chunks, 512/50, all-MiniLM-L6-v2), then
``SIZE`` questions are generated with the default mix (single 0.6, multi 0.3, abstract 0.1)
and, separately, ``SIZE`` single-hop questions. Reported:

- chat requests and prompt tokens per accepted question (the judge server's own counters,
  every candidate included, rejected ones too; the cache is off);
- each gate's rejections as a share of the candidates, and the chunks skipped as boilerplate;
- duplicates left among the accepted questions (exact normalised text, or embedding cosine
  over the generator's threshold), language mismatches (question or reference not in the
  row's language), and accepted references that fail the groundedness gate when judged
  again: goals 0, 0 and 0;
- answerability: hit_rate@5 and MRR@5 of the space's hybrid retriever on the generated
  qrels (chunk ids), beside the same on the hand-written ``bench/data/dbgpt_en_qa.jsonl``
  (document relevance, DB-GPT's recall scene) for the English space.

Goal: at most 4 chat requests per accepted single-hop question, gates included.

Run: ``.venv/bin/python bench/testset.py``; it rewrites its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

import ragmeter
from _corpus import dbgpt_docs  # bench/ is on sys.path when the script runs
from _report import machine_line, write_section
from ragmeter.judge.from_config import judge_from_config
from ragmeter.judge.tasks import detect_language
from ragmeter.judge.usage import Usage
from ragmeter.knowledge.ingest import add_documents
from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.planning.targets import RecallTarget
from ragmeter.testing import ScriptedJudgeServer
from ragmeter.testsets.config import TestsetConfig
from ragmeter.testsets.gates import GATES, grounded, normalise
from ragmeter.testsets.generate import TestsetGenerator, TestsetReport

SIZE = int(os.environ.get("RAGMETER_BENCH_TESTSET_SIZE", "100"))
HAND_WRITTEN = Path(__file__).with_name("data") / "dbgpt_en_qa.jsonl"
METRICS = ["hit_rate@5", "mrr@5"]


async def _generate(
    searcher: SpaceSearcher, server: ScriptedJudgeServer, config: TestsetConfig
) -> tuple[TestsetReport, dict[str, int], float]:
    server.reset()
    judge = judge_from_config("scripted", base_url=server.url, cache=False)
    started = time.perf_counter()
    try:
        report = await TestsetGenerator(searcher, judge, config).generate()
    finally:
        await judge.aclose()
    return report, server.snapshot(), time.perf_counter() - started


async def _checks(
    searcher: SpaceSearcher,
    server: ScriptedJudgeServer,
    rows: list[dict[str, Any]],
    threshold: float,
) -> dict[str, int]:
    """Duplicates, language mismatches and ungrounded references left among ``rows``."""
    texts = [normalise(r["query"]) for r in rows]
    exact = len(texts) - len(set(texts))
    vectors = await searcher.embed_queries([r["query"] for r in rows])
    cosine = vectors @ vectors.T
    np.fill_diagonal(cosine, -1)
    near = int((np.triu(cosine, 1) > threshold).sum())
    mismatched = sum(
        detect_language(r["query"]) != r["language"]
        or detect_language(r["reference"]) != r["language"]
        for r in rows
    )
    judge = judge_from_config("scripted", base_url=server.url, cache=False)
    try:
        problems = await asyncio.gather(
            *(
                grounded(
                    judge,
                    r["query"],
                    r["reference"],
                    r["reference_contexts"],
                    r["language"],
                    Usage(),
                )
                for r in rows
            )
        )
    finally:
        await judge.aclose()
    return {
        "duplicates": exact + near,
        "language": mismatched,
        "ungrounded": sum(p is not None for p in problems),
    }


def _answerability(searcher: SpaceSearcher, rows: Any) -> dict[str, float]:
    target = RecallTarget(searcher, retriever="hybrid", top_k=5)
    result = ragmeter.evaluate(rows, METRICS, target=target)
    summary = result.summary()
    return {m: float(summary[m]["mean"]) for m in METRICS}


def _run_language(language: str, server: ScriptedJudgeServer) -> dict[str, Any]:
    kb = KnowledgeBase()
    info = kb.create_space(f"dbgpt-{language}")
    started = time.perf_counter()
    added = asyncio.run(add_documents(kb, info.id, [dbgpt_docs() / language]))
    build_s = time.perf_counter() - started
    print(f"{language}: {len(added.added)} documents, {added.chunks} chunks in {build_s:.0f}s")
    searcher = SpaceSearcher(kb, info.id)
    mixed_config = TestsetConfig(size=SIZE, seed=0)
    mixed, mixed_stats, mixed_s = asyncio.run(_generate(searcher, server, mixed_config))
    single_config = TestsetConfig(size=SIZE, seed=0, types={"single": 1.0})
    single, single_stats, _ = asyncio.run(_generate(searcher, server, single_config))
    checks = asyncio.run(_checks(searcher, server, mixed.rows, mixed_config.duplicate_threshold))
    generated = _answerability(searcher, mixed.rows)
    hand = _answerability(searcher, HAND_WRITTEN) if language == "en" else None
    print(
        f"{language}: {mixed.accepted} accepted of {mixed.candidates} in {mixed_s:.1f}s; {checks}"
    )
    return {
        "language": language,
        "documents": len(added.added),
        "chunks": added.chunks,
        "mixed": mixed,
        "mixed_stats": mixed_stats,
        "mixed_s": mixed_s,
        "single": single,
        "single_stats": single_stats,
        "checks": checks,
        "generated": generated,
        "hand": hand,
    }


def _per(stats: dict[str, int], key: str, report: TestsetReport) -> str:
    return (
        f"{stats.get(key, 0) / max(report.accepted, 1):.2f}"
        if key == "chat_requests"
        else (f"{stats.get(key, 0) / max(report.accepted, 1):,.0f}")
    )


def _share(count: int, total: int) -> str:
    return f"{count} ({count / max(total, 1):.0%})"


def _body(results: list[dict[str, Any]]) -> str:
    head = "| | " + " | ".join(r["language"] for r in results) + " |"
    rule = "|---|" + "---:|" * len(results)
    lines = [head, rule]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("documents / chunks", [f"{r['documents']} / {r['chunks']}" for r in results])
    row(
        "chunks skipped",
        [
            ", ".join(f"{n} {k}" for k, n in sorted(r["mixed"].skipped.items())) or "0"
            for r in results
        ],
    )
    row("accepted / asked (mix)", [f"{r['mixed'].accepted} / {SIZE}" for r in results])
    row("candidates tried (mix)", [str(r["mixed"].candidates) for r in results])
    row(
        "chat requests per accepted (mix)",
        [_per(r["mixed_stats"], "chat_requests", r["mixed"]) for r in results],
    )
    row(
        "prompt tokens per accepted (mix)",
        [_per(r["mixed_stats"], "prompt_tokens", r["mixed"]) for r in results],
    )
    row(
        "**chat requests per accepted single-hop** (goal ≤ 4)",
        [_per(r["single_stats"], "chat_requests", r["single"]) for r in results],
    )
    row(
        "prompt tokens per accepted single-hop",
        [_per(r["single_stats"], "prompt_tokens", r["single"]) for r in results],
    )
    for gate in (*GATES, "generation_failed"):
        row(
            f"rejected by {gate} (share of candidates)",
            [_share(r["mixed"].rejected.get(gate, 0), r["mixed"].candidates) for r in results],
        )
    row("**duplicates left** (goal 0)", [str(r["checks"]["duplicates"]) for r in results])
    row("**language mismatches** (goal 0)", [str(r["checks"]["language"]) for r in results])
    row(
        "**accepted references failing groundedness again** (goal 0)",
        [str(r["checks"]["ungrounded"]) for r in results],
    )
    row("generation seconds (mix)", [f"{r['mixed_s']:.1f}" for r in results])
    row(
        "hybrid hit_rate@5 / MRR@5, generated qrels (ids)",
        [f"{r['generated']['hit_rate@5']:.3f} / {r['generated']['mrr@5']:.3f}" for r in results],
    )
    row(
        "hybrid hit_rate@5 / MRR@5, hand-written set (documents)",
        [
            f"{r['hand']['hit_rate@5']:.3f} / {r['hand']['mrr@5']:.3f}" if r["hand"] else "—"
            for r in results
        ],
    )
    intro = (
        f"DB-GPT's docs (`en/` and `zh/` of the shared corpus), one space per language "
        "(markdown headers, 512/50, all-MiniLM-L6-v2). The scripted judge (in process, cache "
        f"off) answers every prompt. {SIZE} questions with the default mix, and {SIZE} "
        "single-hop ones for the request goal; requests and tokens are the judge server's own "
        "counts over every candidate, rejected ones included. The hand-written set "
        "(`bench/data/dbgpt_en_qa.jsonl`, 45 questions) judges relevance by document, the "
        "generated one by chunk id, so the generated figures are the stricter test. The "
        "scripted judge writes questions from a sentence of the chunk (its section title and "
        "the sentence's first words), so the answerability figures measure the labels and "
        "the retriever, not a model's question writing."
    )
    return "\n".join([intro, "", *lines, "", machine_line()])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, ScriptedJudgeServer() as server:
        os.environ["RAGMETER_HOME"] = tmp
        results = [_run_language(language, server) for language in ("en", "zh")]
    write_section("testset", "Test set generation on DB-GPT's docs", _body(results))


if __name__ == "__main__":
    main()
