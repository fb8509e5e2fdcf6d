"""A PostgreSQL server of the test session's own: ``initdb`` into a temporary folder and
``pg_ctl start`` on a free port of 127.0.0.1 (its socket in that folder too), a new database
per test, stopped and removed at the session's end. Debian's ``postgresql`` package gives the
binaries (``scripts/install.sh`` installs it); ``initdb`` refuses to run as root, so under root
the server runs as the ``postgres`` user, owner of the folder."""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

#: the server's superuser (trust authentication on loopback: the folder is the session's own)
USER = "ragmeter"


def bindir() -> Path | None:
    """The folder of PostgreSQL's server binaries: ``pg_config --bindir`` when it has
    ``initdb``, else the newest ``/usr/lib/postgresql/*/bin``; None when there is none."""
    config = shutil.which("pg_config")
    if config:
        found = subprocess.run([config, "--bindir"], capture_output=True, text=True, check=False)
        path = Path(found.stdout.strip())
        if found.returncode == 0 and (path / "initdb").is_file():
            return path
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3])
    )
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    """One server in its own temporary folder; ``start`` then ``database`` for each test."""

    def __init__(self, binaries: Path) -> None:
        self.binaries = binaries
        self.root = Path(tempfile.mkdtemp(prefix="ragmeter-pg-"))
        self.data = self.root / "data"
        self.port = 0
        self._as_postgres = os.geteuid() == 0
        self._names = itertools.count(1)
        self._migrated: str | None = None

    def _run(self, *args: str) -> None:
        command = [str(self.binaries / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}{tail}")

    def start(self) -> None:
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            "initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8",
            "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=400 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c timezone=Asia/Shanghai"
        )  # a throwaway server: durability costs time and buys nothing; a zone not UTC's,
        # so a time stored in the server's zone rather than in UTC shows
        for _attempt in range(5):  # another process may take the free port first
            self.port = _free_port()
            try:
                self._run(
                    "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w",
                    "-t", "60", "-o", f"-p {self.port} {options}", "start",
                )  # fmt: skip
                return
            except RuntimeError:
                if _attempt == 4:
                    raise

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/{database}"

    def dsn(self, url: str | None = None) -> str:
        """psycopg's connection string of the database of ``url`` (default: postgres)."""
        database = url.rsplit("/", 1)[-1] if url else "postgres"
        return f"host=127.0.0.1 port={self.port} user={USER} dbname={database}"

    def database(self, *, migrated: bool = False) -> str:
        """A new database's SQLAlchemy URL: empty, or ``migrated`` (at ragmeter's newest
        schema: a copy of a template migrated once per session). Copied file by file, as
        before PostgreSQL 15: 0.10-0.18 s here, where its WAL_LOG default took 0.24-0.30 s."""
        template = self._template() if migrated else "template0"
        name = f"test_{os.getpid()}_{next(self._names)}"
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop the database of ``url``, closing any connection still open to it."""
        self._execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[-1]}" WITH (FORCE)')

    def _template(self) -> str:
        """The session's template: a database at ragmeter's newest schema, which nothing
        stays connected to (PostgreSQL copies a database only when no one is)."""
        if self._migrated is None:
            from ragmeter.store.db import Store

            name = "ragmeter_template"
            self._execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
            Store(self.url(name)).close()  # creates the schema, then lets go of it
            self._migrated = name
        return self._migrated

    def _execute(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as connection:
            connection.execute(statement)  # type: ignore[arg-type]

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
