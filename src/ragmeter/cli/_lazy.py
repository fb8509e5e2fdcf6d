"""Command groups loaded when they are run: ``ragmeter --help`` and ``ragmeter metrics`` do
not import what ``ragmeter runs`` or ``ragmeter space`` need (the store, the indexes)."""

from __future__ import annotations

import importlib
from typing import Any, ClassVar, NamedTuple

import typer
import typer.main
import typer.models
from typer.core import TyperCommand, TyperGroup

__all__ = ["LazyGroup", "LazyTyper"]


class LazyTyper(NamedTuple):
    """A sub-command group by where its ``typer.Typer`` lives, and its one-line help (listed
    by ``--help`` without importing it; a test keeps it equal to the group's own)."""

    module: str
    attribute: str
    help: str

    def load(self) -> typer.Typer:
        sub: typer.Typer = getattr(importlib.import_module(self.module), self.attribute)
        return sub


class LazyGroup(TyperGroup):
    """A typer group whose ``lazy`` sub-groups are imported on first use."""

    lazy: ClassVar[dict[str, LazyTyper]] = {}
    _listing = False

    # contexts and formatters are typed Any: their classes live in typer's private click copy

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        entry = self.lazy.get(cmd_name)
        if found is not None or entry is None:
            return found
        if self._listing:  # a stand-in that only carries the help line
            return TyperCommand(cmd_name, help=entry.help)
        sub = entry.load()
        # as add_typer would have built it: no completion options of its own
        command = typer.main.get_group_from_info(
            typer.models.TyperInfo(sub, name=cmd_name),
            pretty_exceptions_short=sub.pretty_exceptions_short,
            suggest_commands=self.suggest_commands,
            rich_markup_mode=self.rich_markup_mode,
        )
        self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
