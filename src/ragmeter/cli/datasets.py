"""``ragmeter datasets``: the stored datasets and their versions (kept by ``ragmeter eval``,
uploads and test sets): list, show, rm."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console, handles_errors
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.models import DatasetRecord

__all__ = ["datasets_app"]

datasets_app = typer.Typer(
    name="datasets",
    help="Stored datasets and their versions: list, show, rm.",
    no_args_is_help=True,
)


def _runs() -> RunStore:
    return RunStore(KnowledgeBase().store)


def _version(record: DatasetRecord, runs: int) -> dict[str, Any]:
    return {
        "id": record.id,
        "name": record.name,
        "version": record.version,
        "hash": (record.content_hash or "")[:12],
        "rows": record.row_count,
        "source": record.source,
        "runs": runs,
        "created_at": record.created_at.isoformat(),
    }


@datasets_app.command("list")
@handles_errors
def list_datasets(
    limit: Annotated[int, typer.Option(min=1, help="How many, newest first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON, for scripts.")] = False,
) -> None:
    """Datasets by name, newest first: newest version, rows, versions and runs."""
    runs = _runs()
    found, total = runs.datasets(0, limit)
    listed = []
    for record in found:
        versions = runs.dataset_versions(str(record.name))
        used = runs.runs_per_dataset([v.id for v in versions])
        listed.append(
            {
                **_version(record, used.get(record.id, 0)),
                "versions": len(versions),
                "runs": sum(used.values()),
            }
        )
    if as_json:
        typer.echo(json.dumps(listed, ensure_ascii=False))
        return
    table = Table(title=f"datasets ({len(found)} of {total})", title_justify="left")
    for column in ("name", "version", "rows", "versions", "runs", "hash", "source"):
        table.add_column(column)
    for item in listed:
        table.add_row(
            escape(str(item["name"])), str(item["version"]), str(item["rows"]),
            str(item["versions"]), str(item["runs"]), item["hash"], escape(item["source"]),
        )  # fmt: skip
    console.print(table)


@datasets_app.command("show")
@handles_errors
def show_dataset(
    name: Annotated[str, typer.Argument(help="The dataset's name (or NAME@VERSION, or id).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON, for scripts.")] = False,
) -> None:
    """A dataset's versions, newest first, with the runs of each."""
    runs = _runs()
    record = runs.dataset(name)
    versions = runs.dataset_versions(record.name) if record.name else [record]
    used = runs.runs_per_dataset([v.id for v in versions])
    shown = []
    for version in versions:
        found, _total = runs.runs(0, 20, dataset_id=version.id, archived=None)
        item = _version(version, used.get(version.id, 0))
        item["run_ids"] = [
            {"id": r.id, "name": r.name, "state": r.state, "label": (r.lineage or {}).get("label")}
            for r in found
        ]
        shown.append(item)
    if as_json:
        typer.echo(json.dumps(shown, ensure_ascii=False))
        return
    title = f"dataset {escape(str(record.name or record.id))}: {len(versions)} version(s)"
    table = Table(title=title, title_justify="left")
    for column in ("version", "rows", "hash", "source", "created", "runs"):
        table.add_column(column)
    for item in shown:
        listed = ", ".join(f"{r['id'][:12]} {r['name'] or ''}".strip() for r in item["run_ids"])
        more = item["runs"] - len(item["run_ids"])
        table.add_row(
            str(item["version"]), str(item["rows"]), item["hash"], escape(item["source"]),
            item["created_at"][:16].replace("T", " "),
            escape(listed + (f" and {more} more" if more > 0 else "")) or "-",
        )  # fmt: skip
    console.print(table)


@datasets_app.command("rm")
@handles_errors
def remove_dataset(
    name: Annotated[str, typer.Argument(help="The dataset (every version), or NAME@VERSION.")],
) -> None:
    """Forget a dataset: its name is freed; rows that runs still use stay for those runs."""
    record = _runs().delete_dataset(name)
    which = name if "@" in name else f"{record.name} (every version)"
    console.print(f"dataset {escape(which)} removed", highlight=False)
