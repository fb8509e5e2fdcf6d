"""``ragmeter demo``: build a knowledge space from the bundled corpus, then compare vector,
BM25 and hybrid retrieval on the bundled QA set, then generate a small test set from the
space with the scripted judge and score hybrid retrieval on it by chunk id; offline, with no
key."""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragmeter._sync import run_sync
from ragmeter.cli.eval_output import Reports
from ragmeter.cli.eval_request import EvalRequest
from ragmeter.cli.evaluate import run_eval
from ragmeter.cli.space import add_with_progress
from ragmeter.demo import DEMO_METRICS, DEMO_RETRIEVERS, DEMO_SPACE, demo_corpus_path, demo_qa_path
from ragmeter.errors import NotFoundError
from ragmeter.knowledge import ChunkingConfig, KnowledgeBase, SpaceSearcher

__all__ = ["run_demo"]


def _by_language(reports: Reports, metric: str) -> Table:
    """A metric's mean per query language and retriever: where each retriever wins."""
    table = Table(title=f"{metric} by query language", title_justify="left")
    table.add_column("language", style="bold")
    for label, _ in reports:
        table.add_column(label, justify="right")
    means: dict[str, list[str]] = defaultdict(list)
    for _, report in reports:
        groups: dict[str, list[float]] = defaultdict(list)
        for record in report.results(metric):
            language = str(record.raw_dataset.get("metadata", {}).get("language", "?"))
            if record.score is not None:
                groups[language].append(record.score)
        for language in ("en", "zh"):
            values = groups.get(language, [])
            means[language].append(f"{sum(values) / len(values):.4f}" if values else "—")
    for language, cells in means.items():
        table.add_row(language, *cells)
    return table


def run_demo(console: Console, out: Path | None = None) -> Reports:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    kb = KnowledgeBase()
    try:
        info = kb.space(DEMO_SPACE)
    except NotFoundError:
        info = kb.create_space(
            DEMO_SPACE,
            chunking=ChunkingConfig(strategy="markdown", chunk_size=512, chunk_overlap=50),
            description="ragmeter's demo: gardening and tea notes in English and Chinese",
        )
    console.print(
        f"[bold]ragmeter demo[/]: knowledge space '{info.name}' from 6 bundled documents "
        "(3 English, 3 Chinese), local embeddings (all-MiniLM-L6-v2, offline)",
        highlight=False,
    )
    add_with_progress(kb, info.name, [demo_corpus_path()])
    sample = kb.document_chunks(info.name, "zh/tea.md")[0]
    console.print(f"a chunk of zh/tea.md, DB-GPT style:\n  [dim]{escape(sample.content[:90])}…[/]")
    reports = run_eval(
        EvalRequest(
            data=demo_qa_path(),
            metrics=",".join(DEMO_METRICS),
            space=info.name,
            retriever=",".join(DEMO_RETRIEVERS),
            top_k=5,
            out=out,
            title="demo QA (12 en + 12 zh questions)",
        )
    )
    console.print(_by_language(reports, "RetrieverMRRMetric"))
    console.print(
        "The space stays in your store. Try:\n"
        f'  ragmeter space search {info.name} "how do I fix a smelly compost heap"\n'
        f'  ragmeter space search {info.name} "绿茶用多少度的水泡" --retriever bm25\n'
        f"  ragmeter space chunks {info.name} zh/tea.md\n"
        "The local embedding model (all-MiniLM-L6-v2) is English-only: search the Chinese "
        "documents in Chinese, with --retriever bm25 or hybrid (the zh row above shows why). "
        "本地嵌入模型只懂英文：中文文档请用中文查询，并加 --retriever bm25 或 hybrid。",
        highlight=False,
    )
    _generated_test_set(console, kb, info.name)
    return reports


#: questions the demo generates from its space with the scripted judge
DEMO_TESTSET_SIZE = 8


def _generated_test_set(console: Console, kb: KnowledgeBase, space: str) -> None:
    """Generate a small test set from the space with the scripted judge (offline, in
    process), then score the hybrid retriever on it by chunk id."""
    from ragmeter.judge.from_config import judge_from_config
    from ragmeter.testing import ScriptedJudgeServer
    from ragmeter.testsets import TestsetConfig, TestsetGenerator, TestsetReport

    async def generate(url: str) -> TestsetReport:
        judge = judge_from_config("scripted", base_url=url, settings=kb.settings)
        generator = TestsetGenerator(
            SpaceSearcher(kb, space), judge, TestsetConfig(size=DEMO_TESTSET_SIZE)
        )
        try:
            return await generator.generate()
        finally:
            await judge.aclose()

    with ScriptedJudgeServer() as server, tempfile.TemporaryDirectory() as folder:
        report = run_sync(generate(server.url))
        path = Path(folder) / "generated.jsonl"
        lines = (json.dumps(row, ensure_ascii=False) for row in report.rows)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        console.print(
            f"\n[bold]A generated test set[/]: {report.accepted} questions written from the "
            f"space's chunks by the scripted judge ({report.candidates} candidates, "
            f"{sum(report.rejected.values())} rejected by the gates), each labelled with the "
            "ids of its source chunks:",
            highlight=False,
        )
        first = report.rows[0] if report.rows else None
        if first is not None:
            console.print(
                f"  [dim]{escape(first['query'])} -> chunks {', '.join(first['reference_ids'])}[/]",
                highlight=False,
            )
        run_eval(
            EvalRequest(
                data=path,
                metrics="hit_rate,mrr",
                space=space,
                retriever="hybrid",
                top_k=5,
                title=f"generated test set ({report.accepted} questions, relevance by chunk id)",
            )
        )
    console.print(
        f"Make your own: ragmeter testset generate --space {space} --size 20 "
        "--judge-model NAME --out qa.jsonl (--dry-run first shows the cost).",
        highlight=False,
    )
