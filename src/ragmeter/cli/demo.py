"""``ragmeter demo``: build a knowledge space from the bundled corpus, then compare vector,
BM25 and hybrid retrieval on the bundled QA set, then generate a small test set from the
space with the scripted judge and score hybrid retrieval on it by chunk id; offline, with no
key."""

from __future__ import annotations

import json
import os
import shutil
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
from ragmeter.demo import (
    DEMO_METRICS,
    DEMO_RETRIEVERS,
    DEMO_SPACE,
    DEMO_TOP_K,
    demo_corpus_path,
    demo_qa_path,
)
from ragmeter.errors import ConfigError, NotFoundError
from ragmeter.knowledge.chunking import ChunkingConfig
from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.knowledge.spaces import KnowledgeBase

__all__ = ["export_docs", "run_demo"]


def export_docs(console: Console, folder: Path) -> list[Path]:
    """Copy the demo's documents (``en/*.md``, ``zh/*.md``) into ``folder``; ConfigError
    when it is a file or cannot be written."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--export-docs {folder} is a file: name a folder")
    source = demo_corpus_path()
    written: list[Path] = []
    try:
        for document in sorted(source.rglob("*.md")):
            target = folder / document.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(document, target)
            written.append(target)
    except OSError as exc:
        raise ConfigError(f"--export-docs {folder}: {exc.strerror or exc}") from None
    console.print(
        f"{len(written)} markdown documents in {folder}: "
        + ", ".join(str(p.relative_to(folder)) for p in written),
        highlight=False,
    )
    return written


def _by_group(reports: Reports, metric: str, key: str, groups: tuple[str, ...]) -> Table:
    """A metric's mean per retriever over the questions whose ``metadata[key]`` is each of
    ``groups`` (with how many there are): where each retriever wins."""
    table = Table(title=f"{metric} by {key} of question", title_justify="left")
    table.add_column(key, style="bold")
    for label, _ in reports:
        table.add_column(label, justify="right")
    means: dict[str, list[str]] = defaultdict(list)
    counts: dict[str, int] = {}
    for _, report in reports:
        found: dict[str, list[float]] = defaultdict(list)
        for record in report.results(metric):
            group = str(record.raw_dataset.get("metadata", {}).get(key, "?"))
            if record.score is not None:
                found[group].append(record.score)
        for group in groups:
            values = found.get(group, [])
            counts[group] = len(values)
            means[group].append(f"{sum(values) / len(values):.4f}" if values else "—")
    for group, cells in means.items():
        table.add_row(f"{group} ({counts[group]})", *cells)
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
            top_k=DEMO_TOP_K,
            out=out,
            title="demo QA (18 en + 12 zh questions)",
        )
    )
    console.print(_by_group(reports, "RetrieverHitRateMetric", "language", ("en", "zh")))
    console.print(
        _by_group(reports, "RetrieverHitRateMetric", "kind", ("paraphrase", "exact term"))
    )
    console.print(
        "Paraphrases share no word with their answer, so BM25 misses them and vectors find them; "
        "an exact term (damping-off) is what BM25 matches and the small English embedder blurs; "
        "hybrid fuses both rankings. 换一种说法的问题关键词检索找不到，向量检索能找到；"
        "专有名词则相反，混合检索兼顾两者。",
        highlight=False,
    )
    _print_comparison(console, reports, "vector", "hybrid")
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
    print_next_steps(console, reports)
    return reports


def _print_comparison(console: Console, reports: Reports, base: str, other: str) -> None:
    """``other`` against ``base`` question by question: the paired difference per metric with
    its family-wise CI, the Bonferroni-adjusted p-value and the verdict, as ``ragmeter runs
    compare`` shows them (``ragmeter.runs.views.compare``)."""
    from ragmeter.runs.views.compare import compare_scores, correction_text, verdict_text

    by_label = dict(reports)

    def scored(label: str) -> list[tuple[str, str, float | None]]:
        return [(r.query, r.metric_name, r.score) for r in by_label[label]]

    found = compare_scores(scored(base), scored(other))
    header, said = correction_text(found)
    table = Table(
        title=f"{other} against {base}, paired by question (difference {other} - {base}; {said})",
        title_justify="left",
    )
    for column in ("metric", base, other, "difference", header, "p (Bonferroni)", "verdict"):
        table.add_column(column, justify="left" if column in ("metric", "verdict") else "right")
    for item in found:
        ci = (
            item.ci_note
            if item.ci_note
            else "—"
            if item.ci95_low is None or item.ci95_high is None
            else f"{item.ci95_low:+.3f} – {item.ci95_high:+.3f}"
        )
        table.add_row(
            item.metric_name,
            _number(item.base_mean),
            _number(item.other_mean),
            "—" if item.delta is None else f"{item.delta:+.4f}",
            ci,
            "—" if item.p_adjusted is None else f"{item.p_adjusted:.3f}",
            verdict_text(item) if item.verdict else (item.note or "—"),
        )
    console.print(table)


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


#: questions the demo generates from its space with the scripted judge
DEMO_TESTSET_SIZE = 8


def _generated_test_set(console: Console, kb: KnowledgeBase, space: str) -> None:
    """Generate a small test set from the space with the scripted judge (offline, in
    process), then score the hybrid retriever on it by chunk id."""
    from ragmeter.judge.from_config import judge_from_config
    from ragmeter.testing import ScriptedJudgeServer
    from ragmeter.testsets.config import TestsetConfig
    from ragmeter.testsets.generate import TestsetGenerator, TestsetReport

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
                f"  e.g. chunks {', '.join(first['reference_ids'])}. The scripted judge stitches "
                "its questions from the chunk's words (placeholders, free and offline); a real "
                "--judge-model writes questions such as the bundled ones:\n"
                f"  [dim]{escape(_sample_question())}[/]",
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


def _sample_question() -> str:
    """The first bundled question (natural, written by hand) and the document it names."""
    first = json.loads(demo_qa_path().read_text(encoding="utf-8").splitlines()[0])
    return f"{first['query']} -> {first['doc_name']}"


def print_next_steps(console: Console, reports: Reports) -> None:
    """What to run next on the runs the demo stored."""
    ids = [report.run_id for _, report in reports if report.run_id]
    report_id = ids[-1] if ids else "RUN_ID"
    console.print(
        "\n[bold]Next[/] (下一步):\n"
        "  ragmeter runs list            # the runs just stored / 刚保存的运行\n"
        "  ragmeter serve --open         # the dashboard: runs, rows, compare / 仪表盘\n"
        f"  ragmeter report {report_id} --out report.html\n"
        "                                # one HTML file to share / 可分享的 HTML 报告\n"
        "  ragmeter eval data.jsonl -m mrr,ndcg@10\n"
        "                                # your own rows (README: A row) / 评估你自己的数据",
        highlight=False,
    )
