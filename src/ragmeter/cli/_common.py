"""What every CLI command shares: consoles, error handling and running coroutines."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from ragmeter.errors import ConfigError, DatasetError, MetricError, NotFoundError, RagmeterError

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["EXIT_BAD_INPUT", "console", "err_console", "handles_errors", "validation_message"]

console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

#: exit code for bad input (dataset, options, names); 1 is any other failure
EXIT_BAD_INPUT = 2

#: the judge's endpoint, key and time limit, as ``eval``, ``testset`` and ``judge card`` take them
JudgeBaseUrl = Annotated[
    str | None, typer.Option(help="OpenAI-compatible endpoint of the judge (no config needed).")
]
JudgeApiKeyEnv = Annotated[
    str | None, typer.Option(help="Environment variable holding the judge's API key.")
]
JudgeTimeout = Annotated[
    float | None, typer.Option(min=0.1, help="Seconds before a judge request is given up.")
]


def _hide_flag_types() -> None:
    """A flag takes no value, so its help shows no type; typer prints ``<bool>`` after every
    flag (``--no-cache <bool>``, ``--help <bool>``) otherwise."""
    show = typer.core.TyperOption.display_type_rich
    if getattr(show, "_ragmeter", False):
        return

    def display_type_rich(self: typer.core.TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else show(self, ctx)

    display_type_rich._ragmeter = True  # type: ignore[attr-defined]
    typer.core.TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_hide_flag_types()


def handles_errors(command: F) -> F:
    """Print a ``RagmeterError`` as one clear line and exit non-zero."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except RagmeterError as exc:
            err_console.print(
                f"[bold red]error:[/] {escape(str(exc))}",
                markup=True,
                highlight=False,
                soft_wrap=True,
            )
            status = getattr(exc, "status", None)  # a server's answer (ClientError)
            bad_input = isinstance(
                exc, DatasetError | ConfigError | MetricError | NotFoundError
            ) or (isinstance(status, int) and 400 <= status < 500)
            raise typer.Exit(EXIT_BAD_INPUT if bad_input else 1) from None

    return wrapper  # type: ignore[return-value]


def validation_message(exc: ValidationError) -> str:
    """The first problem pydantic found, as one line naming the field."""
    first = exc.errors()[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    field = ".".join(str(p) for p in first["loc"])
    return f"{field}: {message}" if field else message
