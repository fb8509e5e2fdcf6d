from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pg import PostgresServer, bindir

#: under CI a test never skips for a missing resource: the skip is reported as a failure
STRICT = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(autouse=True)
def _private_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test (and the commands it starts) gets its own data folder, never ~/.ragmeter."""
    path = tmp_path_factory.mktemp("ragmeter-home")
    monkeypatch.setenv("RAGMETER_HOME", str(path))
    return path


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The session's own PostgreSQL server on a free port of 127.0.0.1 (see tests/pg.py)."""
    binaries = bindir()
    if binaries is None:
        pytest.skip("PostgreSQL is not installed: scripts/install.sh installs Debian's postgresql")
    pytest.importorskip("psycopg", reason="the 'postgres' extra (psycopg) is not installed")
    server = PostgresServer(binaries)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new store's URL: a SQLite file, then a new database on the session's PostgreSQL
    server; a test using it runs once on each. Every engine the test connected to it is
    closed after it (a store left open would hold PostgreSQL connections until collected)."""
    from sqlalchemy import Engine, event

    from ragmeter.store import db

    if request.param == "sqlite":
        (tmp_path / "home").mkdir()
        url = f"sqlite:///{tmp_path / 'home' / 'ragmeter.db'}"  # store_home's default file
    else:
        url = request.getfixturevalue("postgres").database()
    engines: set[Engine] = set()

    def connected(connection: Any) -> None:
        engines.add(connection.engine)

    event.listen(Engine, "engine_connect", connected)
    try:
        yield url
    finally:
        event.remove(Engine, "engine_connect", connected)
        with db._open_lock:
            db._open.pop(url, None)
        for engine in engines:
            engine.dispose()


@pytest.fixture
def store_home(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``tmp_path/home`` as ``$RAGMETER_HOME``, its configured store ``store_url``'s: the
    default SQLite file (``store_url`` is that file), or the PostgreSQL database named in
    its ``ragmeter.toml``, and then no SQLite file is ever made there."""
    path = tmp_path / "home"
    path.mkdir(exist_ok=True)
    monkeypatch.setenv("RAGMETER_HOME", str(path))
    sqlite = store_url.startswith("sqlite")
    if not sqlite:
        (path / "ragmeter.toml").write_text(f'[store]\nurl = "{store_url}"\n', encoding="utf-8")
    yield path
    assert sqlite or not (path / "ragmeter.db").exists(), "the default store was used"


def _fail_skip(report: Any) -> None:
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
    report.outcome = "failed"
    report.longrepr = f"skipped under CI (CI is set), which hides a missing resource: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        _fail_skip(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if STRICT and report.skipped:
        _fail_skip(report)
