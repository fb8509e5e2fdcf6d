"""The command line page: every command and option, read as ``--help`` reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from docs_reference.markdown import GENERATED, cell, code, prose, table

# -- command line --------------------------------------------------------------------------


def cli_root() -> Any:
    """The ``ragmeter`` command as typer builds it (typer keeps its own copy of click, so
    commands are read through their methods, not click's classes)."""
    import typer.main

    from ragmeter.cli.app import app

    return typer.main.get_command(app)


@dataclass(frozen=True)
class Command:
    path: str
    command: Any
    ctx: Any

    @property
    def is_group(self) -> bool:
        return hasattr(self.command, "list_commands")


def cli_commands(root: Any | None = None) -> list[Command]:
    """Every command and group under ``ragmeter``, depth first (lazy groups loaded)."""
    found: list[Command] = []

    def walk(path: str, command: Any, parent: Any) -> None:
        ctx = command.context_class(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
        found.append(Command(path, command, ctx))
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(f"{path} {name}", sub, ctx)

    walk("ragmeter", root or cli_root(), None)
    return found


def _help_text(text: str | None) -> str:
    """Help as typer shows it: rich's escaped ``\\[`` is a plain bracket."""
    return (text or "").replace("\\[", "[").replace("\b", "")


@dataclass(frozen=True)
class Param:
    names: str
    kind: str
    default: str
    help: str


def param_of(param: Any, ctx: Any) -> Param | None:
    """What ``--help`` says of a parameter: its names, type, default and help (None: hidden)."""
    record = param.get_help_record(ctx)
    if record is None:
        return None
    names, text = record
    kind = ""
    if names.endswith(">") and " <" in names:
        names, kind = names[:-1].rsplit(" <", 1)
    elif getattr(param, "is_flag", False):
        kind = "flag"
    default, notes = "", []
    text = _help_text(text)
    if text.endswith("]") and "[" in text:
        cut = text.rindex("[")
        for note in text[cut + 1 : -1].split("; "):
            if note.startswith("default: "):
                default = note.removeprefix("default: ")
            else:
                notes.append(note)
        text = text[:cut].rstrip() + (f" ({', '.join(notes)})" if notes else "")
    return Param(names, kind, default, text)


def command_section(found: Command) -> str:
    command, ctx, path = found.command, found.ctx, found.path
    usage = " ".join([path, *command.collect_usage_pieces(ctx)])
    depth = path.count(" ")
    heading = "#" * min(depth + 1, 4) if depth else "##"
    parts = [f"{heading} `{path}`", "", f"```text\n{usage}\n```", ""]
    if command.help:
        parts += [prose(_help_text(command.help)), ""]
    rows = []
    for param in command.params:
        described = param_of(param, ctx)
        if described is not None:
            rows.append(
                [
                    ", ".join(code(n.strip()) for n in described.names.split(",")),
                    cell(described.kind),
                    code(described.default),
                    cell(described.help),
                ]
            )
    if rows:
        parts += [table(["argument or option", "type", "default", "description"], rows), ""]
    return "\n".join(parts)


def cli_page() -> str:
    parts = [
        GENERATED,
        "# Command line",
        "",
        "Every command of `ragmeter`, with its arguments and options (`ragmeter COMMAND --help` "
        "prints the same). Exit codes: 0 success, 1 a gate or check failed, 2 bad input or "
        "configuration.",
        "",
    ]
    parts += [command_section(found) for found in cli_commands()]
    return "\n".join(parts)
