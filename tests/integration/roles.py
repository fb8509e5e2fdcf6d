"""A real ``ragmeter serve`` with a user of every role (added with ``ragmeter users add``
before it starts) beside the configured key, and requests as each of them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.integration.helpers import run
from tests.integration.service import KEY, POOL_LIMITS, ServiceProcess

#: the users a test server holds, by role; "config" is the configured key (an admin)
ROLES = ("admin", "member", "reviewer", "viewer", "ingest")


def add_user(home: Path, name: str, role: str) -> str:
    """``ragmeter users add NAME --role ROLE --json``: the key it printed once."""
    done = run("users", "add", name, "--role", role, "--json", home=home)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["name"] == name and printed["role"] == role
    key: str = printed["key"]
    return key


def users_server(
    home: Path, extra: tuple[tuple[str, str], ...] = ()
) -> tuple[ServiceProcess, dict[str, str]]:
    """A started server with one user per role (named after it) and ``extra`` (name, role)
    users, and every key by user name ("config": the configured key)."""
    home.mkdir(parents=True, exist_ok=True)
    keys = {role: add_user(home, role, role) for role in ROLES}
    keys.update({name: add_user(home, name, role) for name, role in extra})
    keys["config"] = KEY
    return ServiceProcess(home).start(), keys


def as_user(server: ServiceProcess, key: str) -> httpx.Client:
    """A client of the server's root (every path, v1 and v2) sending ``key``."""
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=120, limits=POOL_LIMITS)
