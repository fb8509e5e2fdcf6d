"""``ragmeter eval --qrels QRELS --run RUN``: a TREC run against its qrels, with trec_eval's
measures and conventions; the usual table, or ``--format trec`` for exactly what
``trec_eval -q`` prints (``trec-summary``: what ``trec_eval`` prints without ``-q``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from ragmeter._specs import split_specs
from ragmeter.cli._common import console, err_console
from ragmeter.cli._render import ci_text
from ragmeter.errors import ConfigError

if TYPE_CHECKING:
    from rich.table import Table

    from ragmeter.runs.trec import TrecEvaluation

__all__ = [
    "FORMATS",
    "TREC_OPTIONS",
    "TrecRequest",
    "check_trec_options",
    "given_options",
    "run_trec",
    "trec_summary_table",
]

FORMATS = ("table", "trec", "trec-summary")


@dataclass(frozen=True)
class TrecRequest:
    """The options of ``ragmeter eval`` that read TREC files."""

    qrels: Path | None = None
    run: Path | None = None
    #: the ``-m`` values as given (each may name several, comma-separated)
    measures: tuple[str, ...] = ()
    depth: int | None = None
    complete: bool = False
    relevance_level: int | None = None
    output: str = "table"
    out: Path | None = None
    #: keep the evaluation as a stored run (a TREC evaluation keeps nothing unless asked:
    #: each query's ranking and judgements would be stored once per measure)
    store: bool = False

    @property
    def asked(self) -> bool:
        return self.qrels is not None or self.run is not None


#: the options of ``ragmeter eval`` a TREC evaluation takes
TREC_OPTIONS = frozenset(
    {
        "--metrics",
        "--qrels",
        "--run",
        "--depth",
        "--complete",
        "--relevance-level",
        "--format",
        "--out",
        "--no-store",
        "--store",
    }
)


#: how click says an option was given (its ``ParameterSource`` names)
_GIVEN = ("COMMANDLINE", "ENVIRONMENT")


def given_options(ctx: typer.Context) -> list[str]:
    """The options given on the command line (or by environment), by their long flag."""
    given = []
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name) if param.name else None
        if param.param_type_name == "option" and getattr(source, "name", None) in _GIVEN:
            given.append(param.opts[0])
    return given


def check_trec_options(trec: TrecRequest, data: Path | None, options: Sequence[str]) -> None:
    """Bad combinations of DATA, the TREC options and the rest (``options``: the flags
    given on the command line) as a ``ConfigError`` (exit 2)."""
    if trec.output not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, not {trec.output!r}")
    if not trec.asked:
        if data is None:
            raise ConfigError("give a dataset (DATA), or TREC files with --qrels and --run")
        for flag in ("--depth", "--complete", "--format", "--store"):
            if flag in options:
                raise ConfigError(f"{flag} is for TREC files: give --qrels and --run, not DATA")
        return
    if data is not None:
        raise ConfigError(f"give a dataset ({data}) or --qrels and --run, not both")
    if "--store" in options and "--no-store" in options:
        raise ConfigError("--store and --no-store: give one")
    if trec.qrels is None or trec.run is None:
        given, lacking = ("--qrels", "--run") if trec.run is None else ("--run", "--qrels")
        raise ConfigError(f"{given} needs {lacking}: a TREC evaluation reads both files")
    others = [flag for flag in options if flag not in TREC_OPTIONS]
    if others:
        raise ConfigError(
            f"{', '.join(others)}: not for TREC files (--qrels and --run take "
            f"{', '.join(sorted(TREC_OPTIONS - {'--qrels', '--run'}))})"
        )


def trec_summary_table(result: TrecEvaluation, title: str) -> Table:
    """The usual summary table by trec_eval's names and with its ``all`` values (a count is
    summed, gm_map a geometric mean), with the mean's 95% CI where ``all`` is a mean."""
    from rich.table import Table

    summary = result.report.summary()
    table = Table(title=title, title_justify="left")
    table.add_column("measure", style="bold")
    table.add_column("all", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("metric", style="dim")
    for measure in result.measures:
        value = result.all.get(measure.name)
        if measure.spec is None or value is None:
            continue  # runid is in the title; relstring has no all line
        stats = summary[measure.spec]
        ci = "—"
        if measure.aggregate == "mean":
            ci = ci_text(stats)
        shown = str(value) if isinstance(value, int | str) else f"{value:.4f}"
        table.add_row(measure.name, shown, ci, measure.spec)
    return table


def run_trec(trec: TrecRequest) -> None:
    """Evaluate, print the table or trec_eval's text (alone on standard output: notes go to
    standard error), and write ``--out``."""
    from ragmeter.cli.results_file import write_results
    from ragmeter.runs.trec import evaluate_trec

    if trec.qrels is None or trec.run is None:
        raise ConfigError("a TREC evaluation reads both --qrels and --run")
    as_text = trec.output != "table"
    notes = err_console if as_text else console
    measures = [spec for text in trec.measures for spec in split_specs(text)]
    result = evaluate_trec(
        trec.qrels,
        trec.run,
        measures or None,
        relevance_level=1 if trec.relevance_level is None else trec.relevance_level,
        depth=trec.depth,
        complete=trec.complete,
        store=trec.store,
    )
    skipped = result.skipped_note(trec.run.name, trec.qrels.name, "--complete")
    if skipped is not None:
        err_console.print(f"[yellow]note:[/] {escape(skipped)}", highlight=False)
    if as_text:
        sys.stdout.write(result.to_trec(per_query=trec.output == "trec"))
        sys.stdout.flush()
    else:
        title = (
            f"{trec.run.name} (runid {result.runid}) · qrels {trec.qrels.name} · "
            f"{result.report.rows} queries"
        )
        console.print(trec_summary_table(result, title))
    if result.report.run_id is not None:
        notes.print(
            f"run {result.report.run_id} stored (ragmeter runs show {result.report.run_id})",
            highlight=False,
        )
    if trec.out is not None:
        lines = write_results(trec.out, [("", result.report)])
        notes.print(f"results: {trec.out} ({lines} lines)", highlight=False)
