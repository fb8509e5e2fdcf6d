"""``ragmeter labels``: human labels of a run's or a dataset's rows, imported from and
exported to JSONL or CSV files, and listed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console, handles_errors
from ragmeter.datasets.label_file import label_format, read_labels, write_labels
from ragmeter.errors import ConfigError
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.labels_io import label_dataset, label_rows, resolve_labels
from ragmeter.runs.storage.labels import LabelStore
from ragmeter.runs.storage.store import RunStore
from ragmeter.service.identity import LOCAL_USER

__all__ = ["labels_app"]

labels_app = typer.Typer(
    name="labels",
    help="Human labels of a run's or a dataset's rows: import, export, list.",
    no_args_is_help=True,
)

RunOption = Annotated[str | None, typer.Option("--run", help="A run: its dataset version's rows.")]
DatasetOption = Annotated[
    str | None, typer.Option("--dataset", help="A dataset: NAME (newest version), NAME@V or id.")
]
MetricOption = Annotated[str | None, typer.Option("--metric", help="Only this metric's.")]
ReviewerOption = Annotated[str | None, typer.Option("--reviewer", help="Only this reviewer's.")]


def _open(run: str | None, dataset: str | None) -> tuple[RunStore, int]:
    runs = RunStore(KnowledgeBase().store)
    return runs, label_dataset(runs, run_id=run, dataset=dataset)


@labels_app.command("import")
@handles_errors
def import_labels(
    file: Annotated[Path, typer.Argument(help="A .jsonl or .csv file, one label a line.")],
    run: RunOption = None,
    dataset: DatasetOption = None,
    reviewer: Annotated[
        str | None,
        typer.Option("--reviewer", help="Reviewer of lines naming none (default: local)."),
    ] = None,
) -> None:
    """Keep the labels of FILE on the rows of a run's or a dataset's version, all or none (a
    reviewer's earlier label of the same row and metric is replaced)."""
    read = read_labels(file)  # the file first: a bad line is named before the store opens
    runs, dataset_id = _open(run, dataset)
    made = resolve_labels(
        runs,
        dataset_id,
        [entry.label for entry in read],
        reviewer=reviewer or LOCAL_USER.name,
        source=str(file),
        lines=[entry.line for entry in read],
    )
    kept = LabelStore(runs.store).put(dataset_id, made, run_id=run)
    console.print(f"kept {kept} label(s) on dataset version {dataset_id}")


@labels_app.command("export")
@handles_errors
def export_labels(
    run: RunOption = None,
    dataset: DatasetOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="A .jsonl or .csv file (default: JSONL on stdout).")
    ] = None,
    metric: MetricOption = None,
    reviewer: ReviewerOption = None,
) -> None:
    """Write the labels of a run's or a dataset's rows, as ``labels import`` reads them."""
    kind = label_format(out) if out is not None else "jsonl"
    runs, dataset_id = _open(run, dataset)
    found = LabelStore(runs.store).of_dataset(dataset_id, metric=metric, reviewer=reviewer)
    lines = label_rows(runs, dataset_id, found)
    if out is None:
        write_labels(sys.stdout, lines, kind)
        return
    try:
        with out.open("w", encoding="utf-8", newline="") as handle:
            count = write_labels(handle, lines, kind)
    except OSError as exc:
        raise ConfigError(f"cannot write {out}: {exc.strerror or exc}") from None
    console.print(f"wrote {count} label(s) to {escape(str(out))}")


@labels_app.command("list")
@handles_errors
def list_labels(
    run: RunOption = None,
    dataset: DatasetOption = None,
    metric: MetricOption = None,
    reviewer: ReviewerOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON, for scripts.")] = False,
) -> None:
    """The labels of a run's or a dataset's rows: row, metric, reviewer, value, comment."""
    runs, dataset_id = _open(run, dataset)
    found = LabelStore(runs.store).of_dataset(dataset_id, metric=metric, reviewer=reviewer)
    lines = label_rows(runs, dataset_id, found)
    if as_json:
        typer.echo(json.dumps(lines, ensure_ascii=False))
        return
    table = Table(title=f"labels ({len(lines)})", title_justify="left")
    for column in ("row", "metric", "reviewer", "value", "comment"):
        table.add_column(column)
    for line in lines:
        row = str(line["row_index"]) + (
            f" ({line['row_id']})" if line["row_id"] is not None else ""
        )
        table.add_row(
            escape(row), escape(line["metric"]), escape(line["reviewer"]),
            f"{line['value']:g}", escape(line["comment"]),
        )  # fmt: skip
    console.print(table)
