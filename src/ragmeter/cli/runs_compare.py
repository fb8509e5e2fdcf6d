"""``ragmeter runs compare BASE CANDIDATE``: two stored runs compared per metric, the table
the dashboard's Compare view shows (the same numbers, from ``runs.views.pairs.compare_runs``), as
a table, as markdown (``--markdown``, for a pull request) or as JSON (``--json``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console, handles_errors
from ragmeter.cli._render import named
from ragmeter.cli.lineage_view import changes_table, shown_value
from ragmeter.errors import ConfigError, clip
from ragmeter.runs.planning.lineage import Change, changes
from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.views.compare import correction_text, verdict_text
from ragmeter.runs.views.dataset_diff import dataset_diff
from ragmeter.runs.views.pairs import compare_runs
from ragmeter.runs.views.run_view import run_info
from ragmeter.wire.compare import MetricComparison
from ragmeter.wire.lineage import DatasetDiff
from ragmeter.wire.runs import RunInfo

__all__ = ["register"]

#: the colour of each verdict in the table
_COLOURS = {"better": "green", "worse": "red", "equivalent": "cyan", "no_evidence": "dim"}


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _interval(c: MetricComparison) -> str:
    if c.ci95_low is None or c.ci95_high is None:
        return "—"
    if c.ci_note:
        return f"not informative (n={c.paired})"
    return f"[{c.ci95_low:+.4f}, {c.ci95_high:+.4f}]"


def _p(c: MetricComparison) -> str:
    return "—" if c.p_adjusted is None else f"{c.p_adjusted:.3g}"


def _cells(c: MetricComparison) -> list[str]:
    """One metric's row, as the dashboard's Compare table has it."""
    return [
        named(c.metric_name, c.scale),
        _number(c.base_mean),
        _number(c.other_mean),
        _number(c.delta, signed=True),
        _interval(c),
        _p(c),
        verdict_text(c),
        f"{c.paired:,}",
        f"{c.worse:,}/{c.same:,}/{c.better:,}",
    ]


def _head(comparison: Sequence[MetricComparison]) -> list[str]:
    ci, _ = correction_text(comparison)
    first = comparison[0]
    p = "p (Bonferroni)" if first.correction == "bonferroni" else "p"
    return ["metric (scale)", "base", "candidate", "Δ", ci, p, "verdict", "pairs", "rows −/=/+"]


def _table(comparison: Sequence[MetricComparison], title: str) -> Table:
    _, line = correction_text(comparison)
    table = Table(title=title, title_justify="left", caption=line, caption_justify="left")
    for i, column in enumerate(_head(comparison)):
        table.add_column(column, justify="left" if i in (0, 6) else "right")
    for c in comparison:
        cells = [escape(cell) for cell in _cells(c)]
        colour = _COLOURS.get(c.verdict or "", "dim")
        cells[6] = f"[{colour}]{cells[6]}[/]"
        if c.ci_note:
            cells[4] = f"[dim]{cells[4]}[/]"
        table.add_row(*cells)
    return table


def _corrected(found: dict[str, Any] | None) -> str:
    """A run's mean corrected by its labels, its interval and label count."""
    if found is None or found.get("value") is None:
        return "—"
    low, high = found.get("low"), found.get("high")
    interval = f" ({low:.4f} – {high:.4f})" if low is not None and high is not None else ""
    return f"{found['value']:.4f}{interval}, {found['n_labelled']} labels"


_CORRECTED_NOTE = (
    "each run's own mean corrected by its human labels (PPI++, 95% CI); unpaired, not a "
    "test of the difference"
)


def _corrected_rows(comparison: Sequence[MetricComparison]) -> list[list[str]]:
    """Per metric with labels in either run: its name and each run's corrected mean."""
    return [
        [c.metric_name, _corrected(c.base_calibrated), _corrected(c.other_calibrated)]
        for c in comparison
        if c.base_calibrated or c.other_calibrated
    ]


def _corrected_table(comparison: Sequence[MetricComparison]) -> Table | None:
    rows = _corrected_rows(comparison)
    if not rows:
        return None
    table = Table(title="corrected by human labels", title_justify="left", caption=_CORRECTED_NOTE)
    for i, column in enumerate(("metric", "base", "candidate")):
        table.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def _markdown(comparison: Sequence[MetricComparison], title: str) -> str:
    _, line = correction_text(comparison)
    head = _head(comparison)
    rows = ["| " + " | ".join(_md_cell(cell) for cell in _cells(c)) + " |" for c in comparison]
    lines = [
        f"### {title}",
        "",
        f"| {' | '.join(head)} |",
        "|" + "|".join("---" if i in (0, 6) else "---:" for i in range(len(head))) + "|",
        *rows,
        "",
        f"_{line}_",
    ]
    notes = [f"- {c.metric_name}: {c.note}" for c in comparison if c.note]
    corrected = _corrected_rows(comparison)
    if corrected:
        lines += ["", "| corrected by human labels | base | candidate |", "|---|---:|---:|"]
        lines += ["| " + " | ".join(_md_cell(cell) for cell in row) + " |" for row in corrected]
        lines += ["", f"_{_CORRECTED_NOTE}_"]
    return "\n".join([*lines, *(["", *notes] if notes else [])])


def _chosen(
    base: tuple[str, list[str]], other: tuple[str, list[str]], metrics: list[str]
) -> tuple[tuple[str, list[str]], tuple[str, list[str]]]:
    """Both runs cut to the ``--metric`` names asked (the family the correction spans);
    ConfigError naming a metric that neither run has."""
    if not metrics:
        return base, other
    known = set(base[1]) | set(other[1])
    for name in metrics:
        if name not in known:
            raise ConfigError(
                f"--metric: neither run has a metric '{clip(name)}' (base: "
                f"{', '.join(base[1]) or 'none'}; candidate: {', '.join(other[1]) or 'none'})"
            )
    keep = set(metrics)
    return (
        (base[0], [m for m in base[1] if m in keep]),
        (other[0], [m for m in other[1] if m in keep]),
    )


def compare(
    base_id: Annotated[
        str, typer.Argument(help="The baseline run: its id, name or the start of its id.")
    ],
    other_id: Annotated[
        str, typer.Argument(help="The candidate run: its id, name or the start of its id.")
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="Compare only this metric (repeatable); the correction spans those chosen.",
        ),
    ] = None,
    margin: Annotated[
        float | None,
        typer.Option(
            help="Equivalence margin in the metrics' own units: 'equivalent' when the "
            "family-wise interval lies inside ±margin."
        ),
    ] = None,
    alpha: Annotated[
        float, typer.Option(help="Family-wise error rate: 0.05 gives 95% family-wise intervals.")
    ] = 0.05,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a markdown table.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Per metric both runs have: each run's mean, the paired difference (candidate - base)
    with its 95% family-wise CI, the Bonferroni-adjusted p and the verdict: better, worse,
    no evidence of a difference, or (with --margin) equivalent."""
    if markdown and as_json:
        raise ConfigError("--markdown and --json: choose one")
    from ragmeter.store.db import open_store

    runs = RunStore(open_store(None))
    pair = [run_info(runs, runs.find(key), summary=False) for key in (base_id, other_id)]
    base, other = _chosen(
        (pair[0].run_id, pair[0].metrics), (pair[1].run_id, pair[1].metrics), metric or []
    )
    found = compare_runs(runs.store, base, other, alpha=alpha, margin=margin)
    title = f"{_called(pair[1])} (candidate) against {_called(pair[0])} (base)"
    changed = changes(pair[0].lineage, pair[1].lineage)
    rows = None
    if pair[0].dataset_id != pair[1].dataset_id:
        rows = dataset_diff(runs, pair[0].dataset_id, pair[1].dataset_id)
    if as_json:
        document = {
            "base": pair[0].run_id,
            "candidate": pair[1].run_id,
            "changes": [{"key": c.key, "a": c.a, "b": c.b} for c in changed],
            "rows": None if rows is None else rows.model_dump(),
            "alpha": alpha,
            "margin": margin,
            "correction": "bonferroni",
            "family": max(c.family for c in found),
            "header": correction_text(found)[1],
            "metrics": [c.model_dump(mode="json") for c in found],
        }
        typer.echo(json.dumps(document, ensure_ascii=False, indent=2))
    elif markdown:
        typer.echo(_changes_markdown(changed, rows) + _markdown(found, title))
    else:
        console.print(changes_table(pair[0], pair[1]))
        if rows is not None:
            console.print(rows_text(rows), highlight=False)
        console.print(_table(found, title))
        corrected = _corrected_table(found)
        if corrected is not None:
            console.print(corrected)


def _called(info: RunInfo) -> str:
    return f"{info.name} ({info.run_id[:12]})" if info.name else info.run_id


def rows_text(rows: DatasetDiff) -> str:
    """The rows of two dataset versions, in a line."""
    by = "row id" if rows.paired_by == "id" else "query text"
    return (
        f"different dataset versions: {rows.added} rows added, {rows.removed} removed, "
        f"{rows.changed} changed, {rows.unchanged} unchanged (paired by {by})"
    )


def _changes_markdown(changed: list[Change], rows: DatasetDiff | None) -> str:
    """What changed between the runs, before the numbers."""
    lines = ["### What changed", ""]
    if not changed:
        lines.append("Nothing: the two runs have the same lineage.")
    else:
        lines += ["| | base | candidate |", "|---|---|---|"]
        lines += [f"| `{c.key}` | {shown_value(c.a)} | {shown_value(c.b)} |" for c in changed]
    if rows is not None:
        lines += ["", rows_text(rows).capitalize() + "."]
    return "\n".join(lines) + "\n\n"


def register(app: typer.Typer) -> None:
    """Add ``compare`` to ``ragmeter runs``."""
    app.command("compare")(handles_errors(compare))
