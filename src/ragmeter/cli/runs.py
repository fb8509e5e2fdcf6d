"""``ragmeter runs``: the runs in this store (made by ``ragmeter serve``): list, show, export
results, cancel and resume here, in this process, doing only the rows a run lacks."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console, handles_errors
from ragmeter.cli._render import progress_bars, summary_table
from ragmeter.cli.lineage_view import lineage_table
from ragmeter.cli.runs_compare import register
from ragmeter.cli.runs_manage import COMMANDS
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.reports.report import json_default
from ragmeter.runs.execution.choice import executor_for
from ragmeter.runs.execution.executor import execute_run
from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.views.run_view import dataset_text, run_info, run_infos
from ragmeter.wire.runs import RunInfo

__all__ = ["run_listing", "runs_app"]

runs_app = typer.Typer(
    name="runs",
    help="Stored runs (from ragmeter eval and serve): list, show, compare, name, tag, archive, "
    "remove, results, cancel, resume.",
    no_args_is_help=True,
)
register(runs_app)  # runs compare


def _store() -> tuple[KnowledgeBase, RunStore]:
    kb = KnowledgeBase()
    return kb, RunStore(kb.store)


@runs_app.command("list")
@handles_errors
def list_runs(
    state: Annotated[str | None, typer.Option(help="Only runs in this state.")] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Only runs with this tag (repeatable: all).")
    ] = None,
    dataset: Annotated[
        str | None, typer.Option(help="Only runs of this dataset (NAME, NAME@VERSION or id).")
    ] = None,
    archived: Annotated[
        bool, typer.Option("--archived", help="List archived runs instead.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="How many, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON, for scripts.")] = False,
) -> None:
    """Runs, newest first: id, name, tags, target, dataset version, state."""
    _kb, runs = _store()
    dataset_id = None if dataset is None else runs.dataset(dataset).id
    found, total = runs.runs(
        0, limit, state, tags=tuple(tag or ()), dataset_id=dataset_id, archived=archived
    )
    infos = run_infos(runs, found, summary=False)
    if as_json:
        typer.echo(json.dumps([run_listing(i) for i in infos], ensure_ascii=False, default=str))
        return
    which = "archived runs" if archived else "runs"
    table = Table(title=f"{which} ({len(found)} of {total})", title_justify="left")
    table.add_column("id", no_wrap=True)
    for column in ("name", "tags", "target", "dataset", "state", "rows", "created"):
        table.add_column(column)
    for info in infos:
        table.add_row(
            info.run_id,
            escape(info.name or ""),
            escape(", ".join(info.tags)),
            escape(info.label),
            escape(dataset_text(info.dataset, short=True)),
            info.state + (" (resumable)" if info.resumable else ""),
            f"{info.progress['done']}/{info.progress['total']}",
            f"{info.created_at:%Y-%m-%d %H:%M}",
        )
    console.print(table)


def run_listing(info: RunInfo) -> dict[str, Any]:
    """What ``runs list`` shows of a run, for scripts."""
    return {
        "id": info.run_id,
        "name": info.name,
        "tags": info.tags,
        "label": info.label,
        "dataset": {k: info.dataset.get(k) for k in ("name", "version", "hash")},
        "state": info.state,
        "resumable": info.resumable,
        "rows": info.progress,
        "archived": info.archived,
        "created_at": info.created_at.isoformat(),
    }


@runs_app.command("show")
@handles_errors
def show_run(
    run: Annotated[str, typer.Argument(help="The run: its id, name or the start of its id.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run with its lineage as JSON.")
    ] = False,
) -> None:
    """A run: what made it (dataset version, target, judge, code), its state and progress,
    and its summary per metric (mean with 95% CI)."""
    _kb, runs = _store()
    record = runs.find(run)
    runs.reap(record.id)
    info = run_info(runs, runs.get(record.id), summary=False)
    if as_json:
        typer.echo(info.model_dump_json(exclude={"summary"}))
        return
    called = f" '{escape(info.name)}'" if info.name else ""
    title = (
        f"run {info.run_id}{called} · {escape(info.label)} · {info.state} · "
        f"{info.progress['done']}/{info.progress['total']} rows"
    )
    console.print(summary_table(runs.report(info.run_id), title=title))
    console.print(lineage_table(info))
    if info.error:
        console.print(f"[yellow]{escape(info.error)}[/]")


@runs_app.command("results")
@handles_errors
def export_results(
    run_id: Annotated[str, typer.Argument(help="The run: its id, name or the start of its id.")],
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
    report = runs.report(runs.find(run_id).id)
    if out is None or out == "-":
        for record in report:
            typer.echo(json.dumps(record.to_dict(), ensure_ascii=False, default=json_default))
        return
    lines = write_results(Path(out), [("", report)])
    console.print(f"results: {out} ({lines} lines)", highlight=False)


@runs_app.command("cancel")
@handles_errors
def cancel_run(
    run_id: Annotated[str, typer.Argument(help="The run: its id, name or the start of its id.")],
) -> None:
    """Stop a run; a server executing it stops before its next batch of rows."""
    _kb, runs = _store()
    record = runs.request_cancel(runs.find(run_id).id)
    console.print(f"run {record.id} cancelled at {record.done_rows}/{record.total_rows} rows")


@runs_app.command("resume")
@handles_errors
def resume_run(
    run_id: Annotated[str, typer.Argument(help="The run: its id, name or the start of its id.")],
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Also redo rows with a null score.")
    ] = False,
) -> None:
    """Finish a failed, cancelled or interrupted run here; only its missing rows are done."""
    kb, runs = _store()
    run_id = runs.find(run_id).id
    # [executor] in ragmeter.toml; a Ray cluster out of reach is told before the run reopens
    executor = executor_for(kb.settings, kb.store.url, join=True)
    runs.mark_interrupted()  # a run whose server died is resumable now
    record = runs.reopen(run_id, retry_failed=retry_failed)
    worker = threading.Thread(
        target=lambda: asyncio.run(execute_run(runs, kb, run_id, executor=executor))
    )
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


for _name, _command in COMMANDS.items():
    runs_app.command(_name)(_command)
