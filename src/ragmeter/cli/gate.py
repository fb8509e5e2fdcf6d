"""``ragmeter gate`` (and ``ragmeter eval --rule``): judge rules on a candidate run or results
file, optionally against a baseline; print the rules table, write JUnit XML and a markdown
summary, and exit 0 when every rule passes, 1 when one fails (2: bad input, as always)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console
from ragmeter.cli.gate_cards import card_failures, print_cards, run_cards
from ragmeter.config import load_settings
from ragmeter.errors import ConfigError
from ragmeter.reports import EvaluationReport
from ragmeter.runs.cards import CardRequirement, parse_requirement
from ragmeter.runs.execution.repeats import Disagreement
from ragmeter.runs.gates.gate import GateResult, gate_reports
from ragmeter.runs.gates.output import (
    dataset_rows_text,
    junit_xml,
    markdown,
    value_text,
    write_text,
)
from ragmeter.runs.gates.rules import Rule, calibrated_rules, parse_rules
from ragmeter.runs.gates.sources import load_results

__all__ = ["EXIT_FAILED", "GateRequest", "PreparedGate", "judge", "prepare_gate", "run_gate"]

#: exit code when a rule fails
EXIT_FAILED = 1
#: rows printed under each failed rule
_ROWS_SHOWN = 5


@dataclass(frozen=True)
class GateRequest:
    """The gate options of ``ragmeter gate`` and ``ragmeter eval``."""

    rules: tuple[str, ...] = ()
    baseline: str | None = None
    junit: Path | None = None
    markdown: Path | None = None
    #: bound the means corrected by human labels instead of the judge's own (``--calibrated``)
    calibrated: bool = False
    #: ``METRIC:STAT>=VALUE``: the run's judge must have a card meeting it (``--require-card``)
    require_cards: tuple[str, ...] = ()

    @property
    def asked(self) -> bool:
        """Whether any gate option was given (``ragmeter eval`` gates only then)."""
        return bool(self.rules or self.require_cards) or any(
            v is not None for v in (self.baseline, self.junit, self.markdown)
        )


@dataclass(frozen=True)
class PreparedGate:
    """The rules, parsed, and the baseline, read: what is checked before a run is read or
    evaluated, so that a bad rule or baseline costs nothing."""

    rules: list[Rule]
    baseline: EvaluationReport | None
    baseline_name: str | None
    cards: tuple[CardRequirement, ...] = ()


def prepare_gate(request: GateRequest) -> PreparedGate:
    """The rules (``--rule``, else ``[gate] rules``) and the baseline (``--baseline``, else
    ``[gate] baseline``), parsed and read; ConfigError (or NotFoundError) naming what is
    wrong."""
    settings = load_settings()
    texts = list(request.rules) or list(settings.gate.rules)
    cards = tuple(parse_requirement(text) for text in request.require_cards)
    if not texts and not cards:
        where = settings.source or "ragmeter.toml"
        raise ConfigError(
            f"no gate rule: give --rule (e.g. --rule 'faithfulness.mean >= 0.8') or "
            f"[gate] rules in {where}"
        )
    rules = parse_rules(texts)
    if request.calibrated:
        rules = calibrated_rules(rules)
    baseline = request.baseline or settings.gate.baseline
    if baseline is None and any(r.needs_baseline for r in rules):
        first = next(r for r in rules if r.needs_baseline)
        raise ConfigError(
            f"gate rule '{first.text}' compares with a baseline: give --baseline (a stored "
            "run or a results file) or [gate] baseline"
        )
    for option, path in (("--junit", request.junit), ("--markdown", request.markdown)):
        if path is not None and path.is_dir():
            raise ConfigError(f"{option} {path} is a folder: name the file to write")
    if baseline is None:
        return PreparedGate(rules, None, None, cards)
    report, name = load_results(baseline)
    return PreparedGate(rules, report, name, cards)


def _print(result: GateResult) -> None:
    against = f" · baseline {result.baseline}" if result.baseline else ""
    table = Table(title=f"gate · {result.candidate}{against}", title_justify="left")
    for column in ("rule", "value", "bound", "verdict", "detail"):
        table.add_column(column)
    for o in result.outcomes:
        verdict = "[green]pass[/]" if o.passed else "[bold red]FAIL[/]"
        bound = f"{o.rule.op} {o.rule.bound:g}"
        table.add_row(escape(o.rule.name), value_text(o.value), bound, verdict, escape(o.detail))
    versions = dataset_rows_text(result)
    if versions is not None:
        console.print(f"[yellow]{escape(versions)}[/]", highlight=False)
    console.print(table)
    for o in result.failed:
        if not o.rows:
            continue
        console.print(f"[bold]{escape(o.rule.name)}[/]: the worst rows", highlight=False)
        for row in o.rows[:_ROWS_SHOWN]:
            score = f"{row.score:.4g}" if row.score is not None else "null"
            if row.baseline_score is not None:
                score = f"{row.baseline_score:.4g} -> {score}"
            reason = f" · {row.reason}" if row.reason else ""
            metric = f" {row.metric_name}" if o.rule.metric is None else ""
            console.print(
                f"  row {row.row_index}{escape(metric)} ({score}) {escape(row.query)}"
                f"{escape(reason)}",
                highlight=False,
            )


def _finish(result: GateResult, request: GateRequest, unmet: int = 0) -> GateResult:
    _print(result)  # eval has printed the rows whose repeats disagree
    if request.junit is not None:
        write_text(request.junit, junit_xml(result), "--junit")
        console.print(f"junit: {request.junit}", highlight=False)
    if request.markdown is not None:
        write_text(request.markdown, markdown(result), "--markdown")
        console.print(f"markdown: {request.markdown}", highlight=False)
    failed = [f"{len(result.failed)} rule(s)"] if result.failed else []
    failed += [f"{unmet} judge card requirement(s)"] if unmet else []
    verdict = f"failed: {', '.join(failed)}" if failed else "passed"
    console.print(f"gate {verdict}", highlight=False)
    return result


def judge(
    prepared: PreparedGate,
    report: EvaluationReport,
    name: str,
    request: GateRequest,
    flaky: Sequence[Disagreement] = (),
) -> GateResult:
    """Judge the prepared rules on ``report`` (with ``--repeats``, the mean over the repeats
    and ``flaky``, the results whose repeats disagree); print and write the outcome. Exits 1
    when a rule failed, after every output is written."""
    if prepared.rules:
        result = gate_reports(
            report, prepared.rules, prepared.baseline, names=(name, prepared.baseline_name)
        )
    else:  # --require-card alone
        result = GateResult(name, prepared.baseline_name, ())
    found = run_cards(report)
    print_cards(found)
    unmet = card_failures(prepared.cards, found)
    for why in unmet:
        console.print(f"[bold red]judge card FAIL[/] {escape(why)}", highlight=False)
    result = _finish(replace(result, flaky=tuple(flaky)), request, len(unmet))
    if not result.passed or unmet:
        raise typer.Exit(EXIT_FAILED)
    return result


def run_gate(candidate: str, request: GateRequest) -> GateResult:
    """``ragmeter gate``: the rules on a stored run or results file."""
    prepared = prepare_gate(request)
    report, name = load_results(candidate)
    return judge(prepared, report, name, request)
