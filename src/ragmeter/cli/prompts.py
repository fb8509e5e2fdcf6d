"""``ragmeter prompt``: judge templates (AnswerRelevancyMetric) and app answer templates."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ragmeter.cli._common import console, handles_errors
from ragmeter.errors import ConfigError, ConflictError
from ragmeter.prompts.store import PromptStore
from ragmeter.prompts.templates import PROMPT_KINDS, REQUIRED_VARIABLES

__all__ = ["prompt_app"]

prompt_app = typer.Typer(
    name="prompt",
    help="Prompt templates by code: judge templates and app answer templates.",
    no_args_is_help=True,
)

_KINDS_HELP = "; ".join(
    f"{kind}: uses {', '.join('{' + v + '}' for v in REQUIRED_VARIABLES[kind])}"
    for kind in PROMPT_KINDS
)


@prompt_app.command("add")
@handles_errors
def add_command(
    code: Annotated[
        str, typer.Argument(help="The prompt's code (how apps and evals refer to it).")
    ],
    file: Annotated[Path, typer.Option("--file", "-f", help="Text file holding the template.")],
    kind: Annotated[str, typer.Option(help=_KINDS_HELP)] = "judge",
    language: Annotated[str | None, typer.Option(help="en or zh (informative).")] = None,
    description: Annotated[str, typer.Option(help="What the prompt is for.")] = "",
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite an existing code.")] = False,
) -> None:
    """Store a template after checking its {variables}."""
    try:
        template = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{file}: not UTF-8 text") from None
    try:
        record = PromptStore().add(
            code, template, kind=kind, language=language, description=description, replace=replace
        )
    except ConflictError as exc:
        raise ConflictError(f"{exc}; give --replace to overwrite it") from None
    console.print(
        f"stored {record.kind} prompt '{record.code}' version {record.version} "
        f"({len(template)} characters)"
    )


@prompt_app.command("list")
@handles_errors
def list_command() -> None:
    """List the stored prompts."""
    table = Table(title="prompts", title_justify="left")
    for column in ("code", "version", "kind", "language", "characters", "description"):
        table.add_column(column)
    for record in PromptStore().prompts():
        table.add_row(
            record.code,
            str(record.version),
            record.kind,
            record.language or "",
            str(len(record.template)),
            record.description,
        )
    console.print(table)


@prompt_app.command("show")
@handles_errors
def show_command(
    code: Annotated[str, typer.Argument(help="The prompt's code; CODE@V for version V.")],
) -> None:
    """Print a prompt's template as stored (its newest version, or the one CODE@V names)."""
    typer.echo(PromptStore().get(code).template)


@prompt_app.command("rm")
@handles_errors
def rm_command(code: Annotated[str, typer.Argument(help="The prompt's code.")]) -> None:
    """Remove a prompt."""
    PromptStore().remove(code)
    console.print(f"removed prompt '{code}'")
