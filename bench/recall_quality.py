"""Recall quality on DB-GPT's English docs: hit_rate@5 and MRR@5 of vector, BM25 and hybrid
retrieval for a QA set of 45 questions written for this benchmark (``bench/data``), each
naming the document (relative path) that answers it.

The space is built once (markdown-header chunks, 512/50, all-MiniLM-L6-v2), then the QA set is
evaluated with each retriever through the recall scene, as ``ragmeter eval --space`` does.

Run: ``.venv/bin/python bench/recall_quality.py``; it rewrites its section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import ragmeter
from _corpus import dbgpt_docs  # bench/ is on sys.path when the script runs
from _report import machine_line, write_section
from ragmeter.knowledge.ingest import add_documents
from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.planning.targets import RecallTarget

QA = Path(__file__).with_name("data") / "dbgpt_en_qa.jsonl"
METRICS = ["hit_rate@5", "mrr@5", "ndcg@5"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RAGMETER_HOME"] = tmp
        kb = KnowledgeBase()
        info = kb.create_space("dbgpt-en")
        started = time.perf_counter()
        report = asyncio.run(add_documents(kb, info.id, [dbgpt_docs() / "en"]))
        build_s = time.perf_counter() - started
        print(f"{len(report.added)} documents, {report.chunks} chunks in {build_s:.0f}s")
        searcher = SpaceSearcher(kb, info.id)
        results = {}
        for retriever in ("vector", "bm25", "hybrid"):
            target = RecallTarget(searcher, retriever=retriever, top_k=5)  # type: ignore[arg-type]
            results[retriever] = ragmeter.evaluate(QA, METRICS, target=target)
    rows = [
        "| retriever | " + " | ".join(METRICS) + " | misses@5 |",
        "|---|" + "---:|" * (len(METRICS) + 1),
    ]
    for retriever, result in results.items():
        summary = result.summary()
        cells = [
            f"{summary[m]['mean']:.3f} ({summary[m]['ci95_low']:.2f}–{summary[m]['ci95_high']:.2f})"
            for m in METRICS
        ]
        misses = sum(1 for s in result.scores("hit_rate@5") if s == 0)
        rows.append(f"| {retriever} | " + " | ".join(cells) + f" | {misses} |")
    questions = len(results["vector"].scores("hit_rate@5"))
    body = "\n".join(
        [
            f"DB-GPT's English docs (`en/`, {len(report.added)} documents with text, "
            f"{report.chunks} chunks: markdown headers, 512/50, all-MiniLM-L6-v2; built in "
            f"{build_s:.0f} s). {questions} questions in `bench/data/dbgpt_en_qa.jsonl`, each "
            "naming the document that answers it; a retrieved chunk is relevant when it belongs "
            "to that document (DB-GPT's recall scene). Means with bootstrap 95% CIs.",
            "",
            *rows,
            "",
            machine_line(),
        ]
    )
    write_section("recall_quality", "Recall quality on DB-GPT's docs: vector, BM25, hybrid", body)


if __name__ == "__main__":
    main()
