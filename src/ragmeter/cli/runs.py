"""``ragmeter runs``: the runs in this store (made by ``ragmeter serve``): list, show, export
results, cancel and resume here, in this process, doing only the rows a run lacks."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console, handles_errors
from ragmeter.cli._render import progress_bars, summary_table
from ragmeter.knowledge import KnowledgeBase
from ragmeter.reports.report import json_default
from ragmeter.runs.config import EvaluationConfig
from ragmeter.runs.executor import execute_run
from ragmeter.runs.store import RunStore

__all__ = ["runs_app"]

runs_app = typer.Typer(
    name="runs",
    help="Stored runs (from ragmeter eval and serve): list, show, results, cancel, resume.",
    no_args_is_help=True,
)


def _store() -> tuple[KnowledgeBase, RunStore]:
    kb = KnowledgeBase()
    return kb, RunStore(kb.store)


@runs_app.command("list")
@handles_errors
def list_runs(
    state: Annotated[str | None, typer.Option(help="Only runs in this state.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="How many, newest first.")] = 20,
) -> None:
    """Runs, newest first."""
    _kb, runs = _store()
    found, total = runs.runs(0, limit, state)
    table = Table(title=f"runs ({len(found)} of {total})", title_justify="left")
    for column in ("id", "state", "scene", "target", "rows", "created", "error"):
        table.add_column(column)
    for record in found:
        table.add_row(
            record.id,
            record.state + (" (resumable)" if record.resumable else ""),
            record.scene_key,
            record.scene_value or "",
            f"{record.done_rows}/{record.total_rows}",
            f"{record.created_at:%Y-%m-%d %H:%M}",
            escape((record.error or "")[:60]),
        )
    console.print(table)


@runs_app.command("show")
@handles_errors
def show_run(run_id: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """A run's state, progress and summary per metric (mean with 95% CI)."""
    _kb, runs = _store()
    record = runs.get(run_id)
    config = EvaluationConfig.from_stored(record.spec)
    top_k = getattr(config.target, "top_k", None) or config.top_k
    cut = f" · top {top_k}" if top_k else ""
    title = (
        f"run {record.id} · {record.scene_key} {record.scene_value or ''}{cut} · {record.state} · "
        f"{record.done_rows}/{record.total_rows} rows"
    )
    console.print(summary_table(runs.report(run_id), title=title))
    if record.error:
        console.print(f"[yellow]{escape(record.error)}[/]")


@runs_app.command("results")
@handles_errors
def export_results(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="File to write, in the format of its extension (.jsonl, .ndjson, .parquet, "
            ".csv: as 'ragmeter eval --out'); default, or '-': JSON lines on standard output.",
        ),
    ] = None,
) -> None:
    """Print or write a run's results, one JSON line per row x metric."""
    from ragmeter.cli.results_file import check_results_path, write_results

    if out is not None and out != "-":
        check_results_path(Path(out))
    _kb, runs = _store()
    report = runs.report(run_id)
    if out is None or out == "-":
        for record in report:
            typer.echo(json.dumps(record.to_dict(), ensure_ascii=False, default=json_default))
        return
    lines = write_results(Path(out), [("", report)])
    console.print(f"results: {out} ({lines} lines)", highlight=False)


@runs_app.command("cancel")
@handles_errors
def cancel_run(run_id: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """Stop a run; a server executing it stops before its next batch of rows."""
    _kb, runs = _store()
    record = runs.request_cancel(run_id)
    console.print(f"run {record.id} cancelled at {record.done_rows}/{record.total_rows} rows")


@runs_app.command("resume")
@handles_errors
def resume_run(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Also redo rows with a null score.")
    ] = False,
) -> None:
    """Finish a failed, cancelled or interrupted run here; only its missing rows are done."""
    kb, runs = _store()
    runs.mark_interrupted()  # a run whose server died is resumable now
    record = runs.reopen(run_id, retry_failed=retry_failed)
    worker = threading.Thread(target=lambda: asyncio.run(execute_run(runs, kb, run_id)))
    with progress_bars(console, [(f"run {run_id}", record.total_rows)]) as (advance,):
        advance(record.done_rows)
        seen = record.done_rows
        worker.start()
        while worker.is_alive():
            worker.join(0.3)
            now = runs.get(run_id).done_rows
            advance(now - seen)
            seen = now
    show_run(run_id)
    if runs.get(run_id).state != "done":
        raise typer.Exit(1)
