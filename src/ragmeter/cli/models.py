"""``ragmeter model``: the ``[models.NAME]`` tables of ``$RAGMETER_HOME/ragmeter.toml``.
``add`` is safe to run twice (same settings: nothing to do), so setup scripts and the README's
walkthrough can run it every time; keys are never written, only the variable that holds one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console, handles_errors, validation_message
from ragmeter.config import ModelConfig, config_path, load_settings
from ragmeter.errors import ConfigError, ConflictError

__all__ = ["add_model", "model_app"]

model_app = typer.Typer(
    name="model",
    help="Models by name (\\[models.NAME] of ragmeter.toml): add, list.",
    no_args_is_help=True,
)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_TABLE = re.compile(r"^\s*\[")


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name)


def _table(name: str, fields: dict[str, Any]) -> str:
    """``[models.NAME]`` with its fields, strings as TOML basic strings."""
    lines = [f"[models.{_key(name)}]"]
    for key, value in fields.items():
        lines.append(f"{key} = {json.dumps(value) if isinstance(value, str) else value}")
    return "\n".join(lines) + "\n"


def _without_table(text: str, name: str, path: Path) -> str:
    """``text`` without the ``[models.NAME]`` table (its header up to the next table)."""
    keys = "|".join(re.escape(k) for k in {name, json.dumps(name)})
    header = re.compile(rf"^\s*\[\s*models\s*\.\s*(?:{keys})\s*\]")
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        raise ConfigError(
            f"{path} declares model '{name}' in a form this command cannot edit; edit it there"
        )
    end = next((i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
    return "".join(lines[:start] + lines[end:])


def _write_checked(path: Path, text: str, name: str, wanted: ModelConfig) -> None:
    """Write ``text`` and read it back; on any problem the file is left as it was."""
    before = path.read_text(encoding="utf-8") if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    try:
        if load_settings(path).models.get(name) != wanted:
            raise ConfigError(f"{path}: model '{name}' does not read back as written")
    except ConfigError:
        if before is None:
            path.unlink()
        else:
            path.write_text(before, encoding="utf-8")
        raise


def add_model(name: str, fields: dict[str, Any], *, replace: bool = False) -> str:
    """Declare ``[models.NAME]`` in the config file; returns "added", "unchanged" (the same
    settings are there: safe to run twice) or "replaced". Other settings under the same name
    are a ConflictError unless ``replace``."""
    try:
        wanted = ModelConfig(name=name, **fields)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc)) from None
    path = config_path()
    current = load_settings(path).models.get(name)
    if current == wanted:
        return "unchanged"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if current is not None:
        if not replace:
            raise ConflictError(
                f"model '{name}' is already declared in {path} with other settings; give "
                "--replace to overwrite it"
            )
        text = _without_table(text, name, path)
    text = text.rstrip("\n")
    _write_checked(path, (text + "\n\n" if text else "") + _table(name, fields), name, wanted)
    return "added" if current is None else "replaced"


@model_app.command("add")
@handles_errors
def add_command(
    name: Annotated[str, typer.Argument(help="The name commands use (--judge-model NAME).")],
    base_url: Annotated[
        str, typer.Option(help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8765/v1.")
    ],
    model: Annotated[
        str | None, typer.Option(help="The model id the endpoint serves (default: NAME).")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="Variable holding the API key (the key is not stored).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(min=0.1, help="Seconds per request (default 60).")
    ] = None,
    max_concurrency: Annotated[
        int | None, typer.Option(min=1, help="Requests in flight at once.")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite other settings under NAME.")
    ] = False,
) -> None:
    """Declare a model in ragmeter.toml; running it again with the same settings is a no-op."""
    fields: dict[str, Any] = {"base_url": base_url, "model": model or name}
    optional = {"api_key_env": api_key_env, "timeout": timeout, "max_concurrency": max_concurrency}
    fields.update({k: v for k, v in optional.items() if v is not None})
    outcome = add_model(name, fields, replace=replace)
    where = escape(str(config_path()))
    if outcome == "unchanged":
        console.print(f"model '{escape(name)}' is already in {where}, unchanged", highlight=False)
    else:
        console.print(f"{outcome} model '{escape(name)}' in {where}", highlight=False)


@model_app.command("list")
@handles_errors
def list_command() -> None:
    """List the declared models (never their keys)."""
    settings = load_settings()
    table = Table(title=f"models ({escape(str(config_path()))})", title_justify="left")
    for column in ("name", "model", "base_url", "key from"):
        table.add_column(column)
    for name, config in sorted(settings.models.items()):
        key = f"${config.api_key_env}" if config.api_key_env else ""
        table.add_row(escape(name), escape(config.model), escape(config.base_url), key)
    console.print(table)
