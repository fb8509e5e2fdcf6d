from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ragmeter.config import STORE_URL_ENV
from tests.pg import PostgresServer, bindir

#: under CI a test never skips for a missing resource: the skip is reported as a failure
STRICT = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
#: the stores a test marked ``both_stores`` (or using ``store_url``) runs on
STORES = ("sqlite", "postgresql")


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "both_stores: every test of the module runs on SQLite and on PostgreSQL (store_kind)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests of a module marked ``both_stores`` (``pytestmark = pytest.mark.both_stores``),
    and tests using ``store_url``, run once per store: ``[sqlite]``, then ``[postgresql]``
    (grouped by module, so a module's servers start once per store)."""
    if metafunc.definition.get_closest_marker("both_stores") or (
        "store_url" in metafunc.fixturenames
    ):
        metafunc.parametrize("store_kind", STORES, indirect=True, scope="module")


@contextmanager
def _engines_closed(url: str) -> Iterator[None]:
    """Close, at the end, every engine this process connected meanwhile and the store opened
    at ``url``: a store left open would hold PostgreSQL connections until collected."""
    from sqlalchemy import Engine, event

    from ragmeter.store import db

    engines: set[Engine] = set()

    def connected(connection: Any) -> None:
        engines.add(connection.engine)

    event.listen(Engine, "engine_connect", connected)
    try:
        yield
    finally:
        event.remove(Engine, "engine_connect", connected)
        with db._open_lock:
            db._open.pop(url, None)
        for engine in engines:
            engine.dispose()


@contextmanager
def _store_of_every_process(server: PostgresServer) -> Iterator[str]:
    """A new database at the newest schema, named by ``$RAGMETER_STORE_URL`` (so every
    process started meanwhile uses it) until the end, then dropped."""
    url = server.database(migrated=True)
    with pytest.MonkeyPatch.context() as patch, _engines_closed(url):
        patch.setenv(STORE_URL_ENV, url)
        yield url
    server.drop(url)


@pytest.fixture(scope="module", autouse=True)
def store_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """The store a test runs on: ``sqlite`` unless ``pytest_generate_tests`` made it run on
    each. In a ``both_stores`` module on ``postgresql``, the module's own fixtures (a server
    it shares) get a database of the module's and each test one of its own (``_test_store``),
    as each gets a new ``$RAGMETER_HOME`` and so a new SQLite file."""
    kind: str = getattr(request, "param", "sqlite")
    if kind == "postgresql" and request.node.get_closest_marker("both_stores"):
        with _store_of_every_process(request.getfixturevalue("postgres")):
            yield kind
    else:
        yield kind


@pytest.fixture(autouse=True)
def _test_store(request: pytest.FixtureRequest, store_kind: str) -> Iterator[None]:
    if store_kind == "postgresql" and request.node.get_closest_marker("both_stores"):
        with _store_of_every_process(request.getfixturevalue("postgres")):
            yield
    else:
        yield


@pytest.fixture
def store_url(store_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new store's URL: a SQLite file, then a new, empty database on the session's
    PostgreSQL server; a test using it runs once on each."""
    if store_kind == "sqlite":
        (tmp_path / "home").mkdir()
        url = f"sqlite:///{tmp_path / 'home' / 'ragmeter.db'}"  # store_home's default file
        with _engines_closed(url):
            yield url
        return
    server: PostgresServer = request.getfixturevalue("postgres")
    url = server.database()
    with _engines_closed(url):
        yield url
    server.drop(url)


@pytest.fixture
def more_urls(
    store_url: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[str], str]:
    """Another new store of ``store_url``'s kind, by name."""

    def new(name: str) -> str:
        if store_url.startswith("sqlite"):
            return f"sqlite:///{tmp_path / name}.db"
        return str(request.getfixturevalue("postgres").database())

    return new


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
