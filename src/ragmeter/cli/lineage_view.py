"""A run's lineage on the terminal: what made it, and what changed between two runs."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from ragmeter.runs.planning.lineage import changes, flat_lineage
from ragmeter.wire.runs import RunInfo

__all__ = ["changes_table", "lineage_table", "shown_value"]


def shown_value(value: Any) -> str:
    """A lineage value as a table shows it: None as "-", a commit shortened."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def lineage_table(info: RunInfo) -> Table:
    """What made the run, one line per fact (a run stored before lineage says so)."""
    table = Table(title="what made it", title_justify="left", show_header=False)
    table.add_column("what", style="dim")
    table.add_column("value")
    if info.scripted_judge:
        table.add_row("judge", "[bold yellow]scripted judge: scores no model gave (a dry run)[/]")
    if info.tags:
        table.add_row("tags", escape(", ".join(info.tags)))
    if info.note:
        table.add_row("note", escape(info.note))
    if not info.lineage:
        table.add_row("lineage", "not recorded (a run stored before ragmeter kept it)")
        return table
    for key, value in flat_lineage(info.lineage).items():
        table.add_row(escape(key), escape(shown_value(value)))
    return table


def changes_table(a: RunInfo, b: RunInfo) -> Table:
    """What differs between two runs' lineages (Compare's "what changed")."""
    table = Table(title="what changed", title_justify="left")
    table.add_column("")
    table.add_column(escape(a.name or a.run_id[:12]))
    table.add_column(escape(b.name or b.run_id[:12]))
    found = changes(a.lineage, b.lineage)
    for change in found:
        table.add_row(
            escape(change.key), escape(shown_value(change.a)), escape(shown_value(change.b))
        )
    if not found:
        table.add_row("nothing", "same lineage", "same lineage")
    return table
