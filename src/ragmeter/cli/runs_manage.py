"""``ragmeter runs rename/tag/note/archive/unarchive/rm``: naming and tidying stored runs.
Each takes a run by its id, its name or the start of its id."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer
from rich.markup import escape

from ragmeter.cli._common import console, handles_errors
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.storage.store import RunStore

__all__ = [
    "COMMANDS",
    "archive_run",
    "note_run",
    "remove_runs",
    "rename_run",
    "tag_run",
    "unarchive_run",
]


_RUN = "The run: its id, name or the start of its id."


def _runs() -> RunStore:
    return RunStore(KnowledgeBase().store)


@handles_errors
def rename_run(
    run: Annotated[str, typer.Argument(help=_RUN)],
    name: Annotated[str, typer.Argument(help="Its new name (not unique).")],
) -> None:
    """Call a run something else."""
    runs = _runs()
    record = runs.relabel(runs.find(run).id, name=name)
    console.print(f"run {record.id} is now '{escape(record.name or '')}'", highlight=False)


@handles_errors
def tag_run(
    run: Annotated[str, typer.Argument(help=_RUN)],
    tags: Annotated[list[str], typer.Argument(help="Tags to add (or to remove with --remove).")],
    remove: Annotated[bool, typer.Option("--remove", help="Remove these tags instead.")] = False,
) -> None:
    """Add tags to a run, or remove them; `runs list --tag T` finds the runs with a tag."""
    runs = _runs()
    run_id = runs.find(run).id
    now = runs.set_tags(run_id, remove=tags) if remove else runs.set_tags(run_id, add=tags)
    console.print(f"run {run_id} tags: {escape(', '.join(now)) or '(none)'}", highlight=False)


@handles_errors
def note_run(
    run: Annotated[str, typer.Argument(help=_RUN)],
    note: Annotated[str, typer.Argument(help="The note ('' clears it).")],
) -> None:
    """Keep a note with a run (what it tried, what it showed)."""
    runs = _runs()
    record = runs.relabel(runs.find(run).id, note=note)
    console.print(f"run {record.id}: note kept", highlight=False)


def _archive(run: str, archived: bool) -> None:
    runs = _runs()
    record = runs.relabel(runs.find(run).id, archived=archived)
    done = "archived (runs list --archived shows it)" if archived else "back in runs list"
    console.print(f"run {record.id} {done}", highlight=False)


@handles_errors
def archive_run(run: Annotated[str, typer.Argument(help=_RUN)]) -> None:
    """Hide a run from lists, keeping it and its results (unarchive brings it back)."""
    _archive(run, True)


@handles_errors
def unarchive_run(run: Annotated[str, typer.Argument(help=_RUN)]) -> None:
    """List an archived run again."""
    _archive(run, False)


@handles_errors
def remove_runs(
    runs_given: Annotated[
        list[str], typer.Argument(metavar="RUN...", help="Runs to delete: ids, names or id starts.")
    ],
) -> None:
    """Delete runs with their results (a running one: cancel it first). Their datasets stay."""
    runs = _runs()
    records = [runs.find(run) for run in runs_given]  # every one found before any is deleted
    for record in records:
        runs.delete_run(record.id)
        called = f" '{escape(record.name)}'" if record.name else ""
        console.print(f"run {record.id}{called} deleted", highlight=False)


#: the commands, by name, that ``ragmeter runs`` adds
COMMANDS: dict[str, Callable[..., None]] = {
    "rename": rename_run,
    "tag": tag_run,
    "note": note_run,
    "archive": archive_run,
    "unarchive": unarchive_run,
    "rm": remove_runs,
}
