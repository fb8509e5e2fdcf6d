"""``ragmeter agreement RUN``: how far a stored run's judge agrees with the human labels of
its rows, per metric and per row language, and the metric's mean corrected by the labels."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.views.agreement import run_agreement

__all__ = ["show_agreement"]


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _interval(found: dict[str, Any]) -> str:
    if found.get("low") is None or found.get("high") is None:
        return ""
    return f"[{found['low']:.3f}, {found['high']:.3f}]"


def _note(found: dict[str, Any]) -> str:
    note = found.get("note")
    return "" if not note else escape(str(note["text"]))


def _group_table(metric: str, group: dict[str, Any]) -> Table:
    title = (
        f"{metric} · {group['language']} · {group['labelled_rows']} labelled of "
        f"{group['rows']} rows"
    )
    table = Table(title=escape(title), title_justify="left")
    for column in ("against", "statistic", "value", "95% CI", "n", "note"):
        table.add_column(column)
    rows: list[tuple[str, dict[str, Any]]] = [
        (found["against"], stat) for found in group["agreement"] for stat in found["statistics"]
    ]
    if group.get("reviewers_alpha"):
        rows.append(("reviewers", group["reviewers_alpha"]))
    for against, stat in rows:
        table.add_row(
            escape(against),
            stat["name"],
            _number(stat["value"]),
            _interval(stat),
            str(stat["n"]),
            _note(stat),
        )
    corrected = group["calibrated_mean"]
    table.add_row(
        "labels",
        "calibrated_mean",
        _number(corrected["value"]),
        _interval(corrected),
        str(corrected["n_labelled"]),
        f"judge's mean {_number(corrected['judge_mean'])}, lambda {corrected['lam']:.2f}"
        + (f"; {_note(corrected)}" if corrected.get("note") else ""),
    )
    return table


def _confusion_table(found: dict[str, Any]) -> Table | None:
    """The judge's verdicts (rows) against one reviewer's or the majority's (columns)."""
    confusion = found.get("confusion")
    if not confusion:
        return None
    names = [_number(c) for c in confusion["categories"]]
    table = Table()
    table.add_column("")
    for name in names:
        table.add_column(name, justify="right")
    for name, row in zip(names, confusion["counts"], strict=True):
        table.add_row(name, *(str(n) for n in row))
    return table


def show_agreement(run: str, *, metric: str | None, threshold: float | None, as_json: bool) -> None:
    """Print the run's agreement (``runs.views.agreement``) as tables, or as JSON."""
    store = KnowledgeBase().store
    record = RunStore(store).find(run)
    found = run_agreement(store, record, metric=metric, threshold=threshold)
    if as_json:
        typer.echo(json.dumps(found, ensure_ascii=False))
        return
    console.print(
        f"run {record.id}: judge vs human labels (the corrected mean weighs labels by their "
        "chance of being picked where a review queue stratified them)"
    )
    for entry in found["metrics"]:
        if not entry["groups"]:
            console.print(f"{escape(entry['metric'])}: no labels")
            continue
        scale = f", {entry['scale']}" if entry["scale"] else ""
        head = f"{entry['metric']} ({entry['kind']}{scale})"
        reviewers = ", ".join(entry["reviewers"])
        console.print(f"{escape(head)}: {entry['labels']} labels by {escape(reviewers)}")
        for group in entry["groups"]:
            console.print(_group_table(entry["metric"], group))
            for found in group["agreement"]:
                confusion = _confusion_table(found)
                if confusion is not None:
                    who = escape(found["against"])
                    console.print(f"judge (rows) against {who} (columns)", highlight=False)
                    console.print(confusion)
