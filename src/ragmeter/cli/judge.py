"""``ragmeter judge``: judge cards. ``judge card`` runs a judge's metric over a
human-labelled suite and keeps and prints its agreement with the people (per language, task
and model), cost and latency; ``judge cards`` lists the kept cards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter._sync import run_sync
from ragmeter.cli._common import JudgeApiKeyEnv, JudgeBaseUrl, JudgeTimeout, console, handles_errors
from ragmeter.cli._render import progress_bar
from ragmeter.datasets.judge_suites import SUITES, SUITES_ENV
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.cards import (
    CardRequest,
    CardStore,
    StoredCard,
    card_suite,
    headline,
    make_card,
)

__all__ = ["judge_app", "print_card"]

judge_app = typer.Typer(
    name="judge",
    help="Judge cards: a judge's agreement with people on a human-labelled suite.",
    no_args_is_help=True,
)

#: statistics shown per kind of suite, by (card name, column)
_COLUMNS = {
    "binary": (("cohen_kappa", "κ"), ("balanced_accuracy", "bal. acc."), ("f1", "F1 (fail)")),
    "ordinal": (("weighted_kappa", "weighted κ"), ("spearman", "Spearman"), ("accuracy", "exact")),
}


def _cell(stat: dict[str, Any] | None) -> str:
    if stat is None or stat.get("value") is None:
        return "—"
    low, high = stat.get("low"), stat.get("high")
    interval = "" if low is None or high is None else f" [{low:.2f}, {high:.2f}]"
    return f"{stat['value']:.2f}{interval}"


def _rows(card: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, agreement) of every breakdown: all rows, each language, task and model,
    each binarisation of a graded suite."""
    section = card["agreement"]
    rows = [("all", section["all"])]
    for key, parts in section.items():
        if key in ("all", "within_one") or not isinstance(parts, dict):
            continue
        rows += [(f"{key} {label}", found) for label, found in parts.items()]
    return rows


def _table(title: str, kind: str, rows: list[tuple[str, dict[str, Any]]]) -> Table:
    table = Table(title=title)
    table.add_column("rows")
    table.add_column("n", justify="right")
    for _name, column in _COLUMNS[kind]:
        table.add_column(column, justify="right")
    for label, found in rows:
        stats = {s["name"]: s for s in found["statistics"]}
        table.add_row(
            escape(label), f"{found['n']:,}", *(_cell(stats.get(n)) for n, _ in _COLUMNS[kind])
        )
    return table


def print_card(stored: StoredCard) -> None:
    """The card as tables (a graded suite's binarisations apart), with its cost, latency
    and headline."""
    card = stored.card
    suite, judge = card["suite"], card["judge"]
    title = (
        f"judge card {stored.id}: {escape(judge['model'])} on {escape(judge['metric'])}, "
        f"suite {escape(suite['name'])} ({suite['rows']:,} of {suite['rows_in_suite']:,} rows)"
    )
    rows = _rows(card)
    for kind in ("ordinal", "binary"):
        some = [
            (label, found)
            for label, found in rows
            if (found["kind"] == "binary") == (kind == "binary")
        ]
        if some:
            console.print(_table(title, kind, some))
            title = "binary (grade >= cut = relevant)"
    if suite["judge_from_file"]:
        console.print("labels from file, no judge run: the judge's labels came with the suite")
    within = card["agreement"].get("within_one")
    if within and within.get("value") is not None:
        console.print(f"within one grade: {within['value']:.3f} (n {within['n']:,})")
    cost, latency = card.get("cost") or {}, card.get("latency") or {}
    if cost:
        console.print(
            f"cost: {cost.get('requests', 0):g} requests ({cost.get('cached', 0):g} cached), "
            f"{cost.get('prompt_tokens', 0):g} prompt + {cost.get('completion_tokens', 0):g} "
            f"completion tokens; latency {latency.get('seconds')} s "
            f"({latency.get('per_row_ms')} ms a row)",
            highlight=False,
        )
    nulls = card.get("nulls") or {}
    if nulls.get("n"):
        reasons = "; ".join(f"{r['count']}: {r['reason']}" for r in nulls.get("reasons", []))
        console.print(f"null results (left out): {nulls['n']} ({escape(reasons)})")
    if judge.get("scripted"):
        console.print(
            "scripted judge: these numbers come from ragmeter's judge-server, not a model"
        )
    console.print(f"{headline(card)}  (source: {escape(suite['source'])})", highlight=False)


@judge_app.command("card")
@handles_errors
def card_command(
    judge_model: Annotated[
        str,
        typer.Option(
            help="Judge: a \\[models.NAME] of ragmeter.toml, or the model id at "
            "--judge-base-url (for a suite with the judge's labels in a file, its name)."
        ),
    ],
    suite: Annotated[
        str,
        typer.Option(
            help=f"A public suite ({', '.join(SUITES)}) in --suites-dir, or a labelled "
            ".jsonl file: ragmeter rows with a 'human' label (and 'language', 'groups')."
        ),
    ],
    metric: Annotated[
        str | None, typer.Option(help="The judge's metric (default: the suite's).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="At most N rows, spread evenly over the suite.")
    ] = None,
    suites_dir: Annotated[
        Path | None,
        typer.Option(help=f"Folder of the public suites (default: ${SUITES_ENV})."),
    ] = None,
    threshold: Annotated[
        float, typer.Option(help="Judge score from which a row passes (pass/fail suites).")
    ] = 0.5,
    judge_base_url: JudgeBaseUrl = None,
    judge_api_key_env: JudgeApiKeyEnv = None,
    judge_timeout: JudgeTimeout = None,
    judge_prompt: Annotated[
        str | None, typer.Option(help="A stored judge prompt CODE or CODE@VERSION.")
    ] = None,
    max_concurrency: Annotated[
        int, typer.Option(min=1, help="Judge requests in flight at once.")
    ] = 16,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Ask the judge even when a reply is cached.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored card as JSON.")] = False,
) -> None:
    """Run a judge's metric over a human-labelled suite; keep and print its agreement
    (κ, balanced accuracy, F1 with bootstrap intervals and n) per language, task and model,
    with its cost and latency."""
    request = CardRequest(
        judge_model=judge_model,
        suite=suite,
        suites_dir=suites_dir,
        metric=metric,
        limit=limit,
        threshold=threshold,
        judge_base_url=judge_base_url,
        judge_api_key_env=judge_api_key_env,
        judge_timeout=judge_timeout,
        judge_prompt=judge_prompt,
        max_concurrency=max_concurrency,
        cache=not no_cache,
    )
    read = card_suite(request)
    with progress_bar(console, len(read.judged.items), "judging") as advance:
        card = run_sync(make_card(request, read, advance))
    stored = CardStore(KnowledgeBase().store).put(card)
    if as_json:
        console.print_json(json.dumps(stored.as_dict()))
    else:
        print_card(stored)


@judge_app.command("cards")
@handles_errors
def cards_command(
    judge_model: Annotated[str | None, typer.Option(help="Only this judge model's.")] = None,
    metric: Annotated[str | None, typer.Option(help="Only this metric's.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="How many, newest first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON, for scripts.")] = False,
) -> None:
    """Kept judge cards, newest first."""
    found = CardStore(KnowledgeBase().store).list(
        judge_model=judge_model, metric=metric, limit=limit
    )
    if as_json:
        console.print_json(json.dumps([c.as_dict() for c in found]))
        return
    table = Table(title="judge cards")
    for column in ("id", "judge model", "metric", "suite", "created", "card"):
        table.add_column(column)
    for c in found:
        when = c.created_at.isoformat(timespec="seconds") if c.created_at else ""
        table.add_row(
            str(c.id), escape(c.judge_model), escape(c.metric), escape(c.suite), when,
            escape(headline(c.card)),
        )  # fmt: skip
    console.print(table)
