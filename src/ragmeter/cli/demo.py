"""``ragmeter demo``: evaluate the bundled retrieval runs offline and compare them."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from ragmeter.cli._render import comparison_table, progress_bar, summary_table
from ragmeter.demo import DEMO_METRICS, DEMO_RUNS, demo_dataset_path
from ragmeter.embeddings import LocalEmbedder
from ragmeter.reports import EvaluationReport
from ragmeter.runs import evaluate

__all__ = ["run_demo"]


def run_demo(console: Console, out: Path | None = None) -> list[tuple[str, EvaluationReport]]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = LocalEmbedder()  # one model for both runs, loaded once
    reports: list[tuple[str, EvaluationReport]] = []
    console.print(
        "[bold]ragmeter demo[/]: 10 questions on a composting handbook, two retrieval runs, "
        f"local embeddings ({embedder.name}, offline)"
    )
    for run in DEMO_RUNS:
        path = demo_dataset_path(run)
        with progress_bar(console, 10 * len(DEMO_METRICS), f"{run}") as advance:
            report = evaluate(path, list(DEMO_METRICS), embedder=embedder, on_progress=advance)
        reports.append((run, report))
        console.print(summary_table(report, title=f"{run} ({report.rows} rows)"))
        if out is not None:
            target = out.with_name(f"{out.stem}.{run}{out.suffix or '.jsonl'}")
            report.to_jsonl(target)
            console.print(f"results: {target}")
    console.print(comparison_table(reports, "baseline vs reranked"))
    return reports
