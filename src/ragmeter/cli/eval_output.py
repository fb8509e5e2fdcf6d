"""What ``ragmeter eval`` prints and writes once its evaluations are done (here or on a
server): the summary tables, the reasons for null scores, the ``--out`` file, and the check
that every metric scored something."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape

from ragmeter.cli._common import console
from ragmeter.cli._render import null_reasons, side_by_side_table, summary_table, usage_line
from ragmeter.cli.eval_request import EvalRequest
from ragmeter.cli.results_file import write_results
from ragmeter.errors import RagmeterError
from ragmeter.reports import EvaluationReport
from ragmeter.reports.html import shared_name
from ragmeter.runs.execution.repeats import Disagreement
from ragmeter.runs.planning.config import DEFAULT_RECALL_TOP_K

__all__ = ["Reports", "check_scored", "print_disagreements", "print_reports"]

#: rows listed under "repeats disagree"
_FLAKY_SHOWN = 10


def _print_report(report: EvaluationReport, title: str, judged: bool) -> None:
    console.print(summary_table(report, title=title))
    if judged and report.usage is not None:
        console.print(usage_line(report.usage, report.rows, report.seconds), highlight=False)
    _print_nulls(report)


def _print_nulls(report: EvaluationReport, label: str = "") -> None:
    reasons = null_reasons(report)
    if reasons:
        nulls = len(report.errors())
        where = f" ({label})" if label else ""
        console.print(f"[yellow]{nulls} result(s){where} have no score; reasons:[/]")
        for line in reasons:
            console.print(f"  [yellow]-[/] {escape(line)}", highlight=False)


def _write(out: Path, reports: Sequence[tuple[str, EvaluationReport]], key: str | None) -> None:
    lines = write_results(out, reports, key)
    console.print(f"results: {out} ({lines} lines)", highlight=False)


Reports = list[tuple[str, EvaluationReport]]


def _title(request: EvalRequest, rows: int, target: str | None) -> tuple[str, str | None]:
    """The table title (dataset, rows, target, cut-off) and the --out key of the labels."""
    name = request.title or shared_name(str(request.data))  # the file's name, not its folder
    if request.space is not None and request.app is None:
        k = request.top_k or DEFAULT_RECALL_TOP_K
        where = target or request.space
        return f"{name} · {rows} rows · space '{where}' · top {k}", "retriever"
    cut = f" · top {request.top_k}" if request.top_k is not None else ""
    if request.app is not None:
        return f"{name} · {rows} rows · app '{target or request.app}'{cut}", "app"
    return f"{name} · {rows} rows{cut}", None


def print_reports(
    request: EvalRequest, reports: Reports, rows: int, target: str | None = None
) -> None:
    """Tables (side by side for several retrievers) and the --out file of finished reports;
    ``target`` is the space's or app's name (default: as the request gave it). The cut-off
    (``--top-k``) is in the title: metric names carry ``@k`` only when the user wrote it."""
    title, key = _title(request, rows, target)
    judged = request.judge_model is not None
    if len(reports) == 1:
        label = reports[0][0]
        full = f"{title} · {label}" if key == "retriever" else title
        _print_report(reports[0][1], full, judged)
    else:
        console.print(side_by_side_table(reports, title))
        for label, report in reports:
            _print_nulls(report, label)
    if request.out is not None:
        _write(request.out, reports, key)


def check_scored(reports: Reports) -> None:
    """A metric with no score in any row measured nothing (the app, judge or embedder was
    down, or no row could be scored): an error naming it, so scripts and CI notice. Reads
    the scores alone; records are made only for a metric with none."""
    empty: list[str] = []
    for label, report in reports:
        for name in report.metric_names:
            scores = report.scores(name)
            if not scores or any(score is not None for score in scores):
                continue
            ((_kind, reason, count),) = report.null_reasons(name, 1)
            where = f"{name} ({label})" if label else name
            empty.append(
                f"{where}: every one of its {len(scores)} results is null (most common "
                f"reason, {count} of {len(scores)}: {reason or 'no reason'})"
            )
    if empty:
        raise RagmeterError("no score at all for " + "; ".join(empty))


def print_disagreements(flaky: Sequence[Disagreement], repeats: int) -> None:
    """The rows whose ``repeats`` judgements disagree (the table above is their mean)."""
    if not flaky:
        console.print(f"scores are the mean of {repeats} repeats; every repeat agreed")
        return
    console.print(
        f"[yellow]scores are the mean of {repeats} repeats; {len(flaky)} result(s) "
        "disagree between repeats:[/]"
    )
    for item in flaky[:_FLAKY_SHOWN]:
        scores = ", ".join("null" if s is None else f"{s:.3g}" for s in item.scores)
        console.print(
            f"  [yellow]-[/] row {item.row_index} {escape(item.metric_name)} ({scores}): "
            f"{escape(item.query[:80])}",
            highlight=False,
        )
