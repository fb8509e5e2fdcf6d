"""Rich rendering shared by CLI commands: progress bars and summary tables."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from ragmeter.reports import EvaluationReport, MetricSummary
from ragmeter.reports.stats import SMALL_SAMPLE

__all__ = [
    "ci_text",
    "comparison_table",
    "named",
    "null_reasons",
    "progress_bar",
    "progress_bars",
    "side_by_side_table",
    "summary_table",
    "usage_line",
]


def _columns() -> tuple[Any, ...]:
    return (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )


@contextmanager
def progress_bar(console: Console, total: int, label: str) -> Iterator[Any]:
    """A progress bar over ``total`` results; yields a callback ``advance(n)``."""
    with progress_bars(console, [(label, total)]) as (advance,):
        yield advance


@contextmanager
def progress_bars(
    console: Console, stages: Sequence[tuple[str, int]]
) -> Iterator[list[Callable[[int], None]]]:
    """One bar per ``(label, total)`` stage; yields their ``advance(n)`` callbacks in order."""
    with Progress(*_columns(), console=console, transient=True) as progress:
        tasks = [progress.add_task(label, total=total) for label, total in stages]
        yield [functools.partial(progress.advance, task) for task in tasks]


def _fmt(value: object, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "—"


def named(name: str, scale: object) -> str:
    """A metric's name with its scale, ``mrr (0-1)``, where the scale is known."""
    return f"{name} ({scale})" if scale else name


def ci_text(stats: Mapping[str, Any], digits: int = 4, joiner: str = " – ") -> str:
    """A summary's 95% CI, or "not informative" with the count when ``ci_note`` flags it
    (fewer than 30 values, or all equal): a one-row interval ``0.333-0.333`` says nothing."""
    if stats.get("ci95_low") is None:
        return "—"
    if stats.get("ci_note"):
        return f"not informative (n={stats['count']})"
    return f"{_fmt(stats['ci95_low'], digits)}{joiner}{_fmt(stats['ci95_high'], digits)}"


def summary_table(report: EvaluationReport, title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("metric (scale)", style="bold")
    table.add_column("mean", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("scored", justify="right")
    table.add_column("null", justify="right")
    summary = report.summary()
    labelled = any("labelled" in stats for stats in summary.values())
    if labelled:
        table.add_column("corrected by labels (95% CI, labels)", justify="right")
    for name, stats in summary.items():
        nulls = int(stats["null"] or 0)
        cells = [
            named(name, stats.get("scale")),
            _fmt(stats["mean"]),
            f"[dim]{ci_text(stats)}[/]" if stats.get("ci_note") else ci_text(stats),
            str(stats["count"]),
            f"[yellow]{nulls}[/]" if nulls else "0",
        ]
        if labelled:
            cells.append(_calibrated_text(stats))
        table.add_row(*cells)
    captions = []
    if any(stats.get("ci_note") for stats in summary.values()):
        captions.append(f"not informative: fewer than {SMALL_SAMPLE} scores, or all equal")
    captions += sorted(
        {str(s["calibrated_note"]) for s in summary.values() if s.get("calibrated_note")}
    )
    table.caption = "; ".join(captions) or None
    return table


def _calibrated_text(stats: MetricSummary) -> str:
    """The corrected mean, its interval and how many labels, or a dash without labels."""
    if "labelled" not in stats:
        return "—"
    low, high = stats.get("calibrated_low"), stats.get("calibrated_high")
    interval = f" ({_fmt(low)} – {_fmt(high)})" if low is not None and high is not None else ""
    text = f"{_fmt(stats.get('calibrated_mean'))}{interval}, {stats['labelled']}"
    return f"[dim]{text}[/]" if stats.get("calibrated_note") else text


def comparison_table(reports: Sequence[tuple[str, EvaluationReport]], title: str) -> Table:
    """Means of several reports side by side, with the change from the first."""
    table = Table(title=title, title_justify="left")
    table.add_column("metric (scale)", style="bold")
    for label, _ in reports:
        table.add_column(label, justify="right")
    if len(reports) > 1:
        table.add_column("change", justify="right")
    summaries = [report.summary() for _, report in reports]
    for name in reports[0][1].metric_names:
        means = [s[name]["mean"] for s in summaries]
        cells = [_fmt(m) for m in means]
        if len(reports) > 1:
            first, last = means[0], means[-1]
            if not isinstance(first, int | float) or not isinstance(last, int | float):
                cells.append("—")
            else:
                delta = float(last) - float(first)
                colour = "green" if delta > 0 else "red" if delta < 0 else "white"
                cells.append(f"[{colour}]{delta:+.4f}[/]")
        table.add_row(named(name, summaries[0][name].get("scale")), *cells)
    return table


def side_by_side_table(reports: Sequence[tuple[str, EvaluationReport]], title: str) -> Table:
    """Each metric's mean and 95% CI under several targets (retrievers), best in bold."""
    table = Table(title=title, title_justify="left")
    table.add_column("metric (scale)", style="bold")
    for label, _ in reports:
        table.add_column(label, justify="right")
    summaries = [report.summary() for _, report in reports]
    for name in reports[0][1].metric_names:
        means = [s[name]["mean"] for s in summaries]
        best = max((float(m) for m in means if isinstance(m, int | float)), default=None)
        cells = []
        for stats, mean in zip(summaries, means, strict=True):
            text = _fmt(mean)
            if stats[name]["ci95_low"] is not None:
                text += f" [dim]({ci_text(stats[name], 3, '–')})[/]"
            if stats[name]["null"]:
                text += f" [yellow]{stats[name]['null']} null[/]"
            if isinstance(mean, int | float) and float(mean) == best and len(reports) > 1:
                text = f"[bold green]{text}[/]"
            cells.append(text)
        table.add_row(named(name, summaries[0][name].get("scale")), *cells)
    return table


def null_reasons(report: EvaluationReport, limit: int = 5) -> list[str]:
    """The most common reasons for null scores, as ``"metric: reason (n)"`` lines."""
    counts = Counter((r.metric_name, r.error or "") for r in report.errors())
    return [f"{metric}: {reason} ({n})" for (metric, reason), n in counts.most_common(limit)]


def usage_line(usage: dict[str, float], rows: int, seconds: float) -> str:
    """One line of judge cost: requests, cache hits, tokens, per row and in total."""
    per_row = max(rows, 1)
    requests = usage.get("requests", 0.0)
    prompt = usage.get("prompt_tokens", 0.0)
    completion = usage.get("completion_tokens", 0.0)
    parts = [
        f"judge: {requests:g} requests ({requests / per_row:.2f}/row)",
        f"{usage.get('cached', 0.0):g} from cache",
        f"{prompt:g} prompt tokens ({prompt / per_row:.0f}/row)",
        f"{completion:g} completion tokens",
    ]
    if usage.get("retries"):
        parts.append(f"{usage['retries']:g} retries")
    if usage.get("reasks"):
        parts.append(f"{usage['reasks']:g} re-asks")
    parts.append(f"{usage.get('embedding_requests', 0.0):g} embedding calls")
    parts.append(f"{seconds:.1f}s ({rows / seconds if seconds else 0:.1f} rows/s)")
    line = " · ".join(parts)
    if usage.get("scripted"):
        line += "\nscripted judge: these scores come from ragmeter's judge-server, not a model"
    return line
