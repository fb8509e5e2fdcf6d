"""``ragmeter users``: people and programs holding keys to the service, each with a role
(docs/security.md has what each role may do), in the local store."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter.cli._common import console, handles_errors
from ragmeter.store.users import AuditLog, Role, User, UserStore

__all__ = ["users_app"]

users_app = typer.Typer(
    name="users",
    help="Users of the service and their keys: add, list, disable, rotate.",
    no_args_is_help=True,
)

_ROLES = ", ".join(r.value for r in Role)
#: who the audit log names for a change made with this command line (on the store's machine)
_CLI_USER = "local"
_JSON = typer.Option("--json", help="Print JSON, for scripts.")


def _print_key(user: User, key: str, as_json: bool, what: str) -> None:
    if as_json:
        typer.echo(json.dumps({"name": user.name, "role": user.role.value, "key": key}))
        return
    console.print(f"{what} user '{escape(user.name)}' ({user.role.value}); its key, shown once:")
    typer.echo(key)


@users_app.command("add")
@handles_errors
def add_user(
    name: Annotated[str, typer.Argument(help="The user's name (letters, digits, . _ @ -).")],
    role: Annotated[str, typer.Option("--role", help=f"One of {_ROLES}.")],
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Add a user and print its new key once (the store keeps only its hash)."""
    user, key = UserStore().add(name, role)
    AuditLog().record(
        _CLI_USER,
        "ragmeter users add",
        "user",
        user.name,
        after={"name": user.name, "role": user.role.value},
    )
    _print_key(user, key, as_json, "added")


@users_app.command("list")
@handles_errors
def list_users(as_json: Annotated[bool, _JSON] = False) -> None:
    """The users by name: role, whether disabled, when added (never their keys)."""
    found = UserStore().list()
    if as_json:
        typer.echo(json.dumps([u.as_dict() for u in found]))
        return
    table = Table(title=f"users ({len(found)})", title_justify="left")
    for column in ("name", "role", "disabled", "created"):
        table.add_column(column)
    for user in found:
        created = user.created_at.isoformat(" ", "seconds") if user.created_at else ""
        table.add_row(escape(user.name), user.role.value, "yes" if user.disabled else "", created)
    console.print(table)


@users_app.command("disable")
@handles_errors
def disable_user(
    name: Annotated[str, typer.Argument(help="The user's name.")],
    enable: Annotated[bool, typer.Option("--enable", help="Accept its key again.")] = False,
) -> None:
    """Refuse a user's key (and end its dashboard sessions) from now on."""
    user = UserStore().disable(name, disabled=not enable)
    action = "ragmeter users disable" + (" --enable" if enable else "")
    AuditLog().record(_CLI_USER, action, "user", user.name)
    console.print(f"user '{escape(user.name)}' {'enabled' if enable else 'disabled'}")


@users_app.command("rotate")
@handles_errors
def rotate_key(
    name: Annotated[str, typer.Argument(help="The user's name.")],
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Give a user a new key, printed once; the old key stops working at once."""
    user, key = UserStore().rotate(name)
    AuditLog().record(_CLI_USER, "ragmeter users rotate", "user", user.name)
    _print_key(user, key, as_json, "new key for")
