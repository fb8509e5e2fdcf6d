"""Opening the store: an engine on the configured URL, migrated to the latest schema."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import orjson
from sqlalchemy import (
    ClauseElement,
    Connection,
    Engine,
    create_engine,
    event,
    insert,
    inspect,
    make_url,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.compiler import SQLCompiler

from ragmeter.errors import StoreError
from ragmeter.store.locks import write_lock

__all__ = [
    "Store",
    "insert_plain",
    "json_array_text",
    "json_text",
    "json_texts",
    "numbers_as_json",
    "open_store",
    "plain_cursor",
    "plain_rows",
]

_MIGRATIONS = Path(__file__).with_name("migrations")
#: the newest migration's revision (a test keeps it equal to alembic's head)
HEAD_REVISION = "0030"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")  # first: switching to WAL may wait for a lock
    if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":  # once per database
        # a new, empty file: 16 KiB pages (SQLite's default is 4 KiB). A stored run writes
        # rows x metrics results through 4 B-trees; larger pages make that bulk write and its
        # checkpoint ~10% faster (bench/stored_runs.py). A no-op on a file with content.
        cursor.execute("PRAGMA page_size=16384")
        # another process holding the new file (switching it itself): this connection goes
        # on in the file's mode, a later one switches it
        with contextlib.suppress(sqlite3.OperationalError):
            cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _postgresql_utc(dbapi_connection: Any, _record: Any) -> None:
    """Times in UTC on every PostgreSQL connection: ``now()`` (the columns' server default)
    is stored in the session's zone, the server's own unless told, and ragmeter's times are
    UTC without a zone, as SQLite's CURRENT_TIMESTAMP gives them. Committed at once, or the
    pool's rollback would undo it."""
    with dbapi_connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'UTC'")
    dbapi_connection.commit()


def _postgresql_nul(dbapi_connection: Any, _record: Any) -> None:
    """Text is stored on PostgreSQL with U+FFFD for each NUL character: its text holds none
    (psycopg refuses one, failing the whole statement: a 500, a failed run), SQLite's does.
    A row, an app's answer or a name looked up may hold one; a lookup then finds nothing."""
    from psycopg.adapt import PyFormat

    adapters = dbapi_connection.adapters
    # the last one registered serves ``%s``: the text one, as psycopg's own default (a string
    # of unknown type, which PostgreSQL reads as the column's type: json, integer, ...)
    for form in (PyFormat.BINARY, PyFormat.TEXT):
        adapters.register_dumper(str, _nul_free(adapters.get_dumper(str, form)))


@functools.cache
def _nul_free(dumper: Any) -> type:
    """``dumper`` (psycopg's of ``str``, a C class: wrapped, not subclassed) writing U+FFFD
    in place of NUL."""
    from psycopg.adapt import Dumper

    class NulFree(Dumper):
        format = dumper.format

        def __init__(self, cls: type, context: Any = None) -> None:
            super().__init__(cls, context)
            self._dumper = dumper(cls, context)
            self.oid = self._dumper.oid

        def dump(self, obj: str) -> Any:
            return self._dumper.dump(obj.replace("\x00", "\ufffd"))

        def quote(self, obj: str) -> Any:
            return self._dumper.quote(obj.replace("\x00", "\ufffd"))

    return NulFree


def _finite(value: Any) -> Any:
    """``value`` with every NaN and infinity made None, which JSON can hold."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


#: ``json.dumps(value, allow_nan=False)`` made once, not once per value (rows are stored by
#: the million)
_STRICT = json.JSONEncoder(allow_nan=False)


#: an escaped NUL in JSON text (``\\u0000``), not an escaped backslash followed by ``u0000``
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def _no_nul(text: str) -> str:
    """JSON text with each NUL character written as U+FFFD, as text columns hold it on
    PostgreSQL: its JSON operators refuse ``\\u0000`` (a row search answered 500)."""
    return _NUL_ESCAPE.sub(r"\1\\ufffd", text) if "\\u0000" in text else text


def to_json(value: Any) -> str:
    """JSON columns as standard JSON: NaN and infinities (which Python's reader accepts, but
    SQLite's JSON functions and other databases refuse) are stored as null, NUL characters
    as U+FFFD."""
    try:
        return _no_nul(_STRICT.encode(value))
    except ValueError:
        return _no_nul(_STRICT.encode(_finite(value)))


def numbers_as_json(value: Any) -> Any:
    """JSON fallback: numpy scalars and arrays as numbers and lists."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


_ORJSON = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def json_text(value: Any) -> str:
    """``value`` as JSON text for a JSON column written by ``insert_plain`` (orjson, ~10x the
    standard encoder): numpy values as numbers, NaN and infinities as null. What orjson
    refuses (a lone surrogate, an integer past 64 bits) goes through ``to_json``."""
    try:
        return _no_nul(orjson.dumps(value, default=numbers_as_json, option=_ORJSON).decode())
    except (orjson.JSONEncodeError, TypeError):
        return to_json(json.loads(json.dumps(value, default=numbers_as_json)))


def json_texts(values: Iterable[Any]) -> list[str | None]:
    """``json_text`` of each value, None for None (many values: one orjson call each)."""
    dumps = orjson.dumps
    try:
        return [
            None
            if v is None
            else _no_nul(dumps(v, default=numbers_as_json, option=_ORJSON).decode())
            for v in values
        ]
    except (orjson.JSONEncodeError, TypeError):
        return [None if v is None else json_text(v) for v in values]


def json_array_text(values: Sequence[Any]) -> str | None:
    """``values`` as one JSON array text, each element as ``json_text`` writes it (one
    orjson call for them all); None when orjson refuses one of them (``json_text`` each)."""
    try:
        return _no_nul(orjson.dumps(list(values), default=numbers_as_json, option=_ORJSON).decode())
    except (orjson.JSONEncodeError, TypeError):
        return None


def insert_plain(
    session: Session, table: type[Any], columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """INSERT ``rows`` (tuples of ``columns``' values) into model ``table``'s table with one
    executemany on the driver's cursor, in the session's transaction: no per-value
    conversion, so JSON columns take JSON text (``json_text``) and booleans, numbers and
    strings go as they are. The statement is compiled for the session's database
    (PostgreSQL's casts included)."""
    if not rows:
        return
    connection = session.connection()
    sql, order = _insert_sql(connection.dialect, cast(Any, table), tuple(columns))
    args: Any
    if order is None:
        args = [dict(zip(columns, row, strict=True)) for row in rows]
    elif order == list(range(len(columns))):
        args = rows
    else:
        args = [tuple(row[i] for i in order) for row in rows]
    cursor = connection.connection.cursor()
    try:
        cursor.executemany(sql, args)
    finally:
        cursor.close()


@functools.lru_cache(maxsize=128)
def _insert_sql(
    dialect: Dialect, table: Any, columns: tuple[str, ...]
) -> tuple[str, list[int] | None]:
    """The INSERT of ``columns`` into ``table`` for ``dialect`` and, for positional
    parameters, the order of the columns it takes (compiled once: 2 ms each, per batch)."""
    compiled = insert(table).compile(dialect=dialect, column_keys=list(columns))
    assert isinstance(compiled, SQLCompiler)  # an insert compiles to one
    if compiled.positiontup is None:
        return str(compiled), None
    return str(compiled), [columns.index(name) for name in compiled.positiontup]


def plain_rows(session: Session, query: ClauseElement) -> list[tuple[Any, ...]]:
    """``query``'s rows as plain tuples straight from the driver, for reads of plain numbers
    by the hundred thousand (a comparison of two runs): Row objects cost ~1 us each, about
    as much as SQLite's whole read. Columns needing a type conversion must not use it."""
    with plain_cursor(session, query) as cursor:
        return list(cursor.fetchall())


@contextmanager
def plain_cursor(session: Session, query: ClauseElement) -> Iterator[Any]:
    """The driver's cursor over ``query`` (``fetchmany`` a few rows at a time), as
    ``plain_rows`` reads it; closed on leaving."""
    connection = session.connection()
    compiled = query.compile(
        dialect=connection.dialect, compile_kwargs={"render_postcompile": True}
    )  # IN lists as plain parameters
    assert isinstance(compiled, SQLCompiler)  # a select compiles to one
    params = compiled.construct_params()
    args: Any = params
    if compiled.positiontup is not None:
        args = tuple(params[name] for name in compiled.positiontup)
    cursor = connection.connection.cursor()
    try:
        cursor.execute(str(compiled), args)
        yield cursor
    finally:
        cursor.close()


class Store:
    """The database behind ragmeter: SQLite in ``$RAGMETER_HOME`` by default, any SQLAlchemy
    URL otherwise. Opening it applies pending migrations."""

    def __init__(self, url: str) -> None:
        self.url = url
        #: the URL as messages show it: its password masked
        self.shown_url = _shown(url)
        kwargs: dict[str, Any] = {"json_serializer": to_json}
        #: where files that live beside the database go (space indexes)
        self.files_dir = _files_dir(url)
        if url.startswith("sqlite"):
            path = url.split(":///", 1)[-1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:  # a server closes connections (a restart, a failover): test each before use
            kwargs["pool_pre_ping"] = True
        try:
            self.engine: Engine = create_engine(url, **kwargs)
        except (SQLAlchemyError, ValueError) as exc:
            raise StoreError(f"cannot open store {self.shown_url!r}: {exc}") from exc
        except ImportError as exc:  # the URL's driver
            extra = " (pip install 'ragmeter[postgres]')" if url.startswith("postgresql") else ""
            raise StoreError(
                f"cannot open store {self.shown_url!r}: its driver {exc.name or exc} is not "
                f"installed{extra}"
            ) from exc
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        elif self.engine.dialect.name == "postgresql":
            event.listen(self.engine, "connect", _postgresql_utc)
            event.listen(self.engine, "connect", _postgresql_nul)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.migrate()

    def migrate(self) -> None:
        """Bring the schema to the newest revision. A store there already needs nothing (one
        read, no lock), and a new, empty database gets the newest schema at once (from the
        models, which a test keeps equal to what the migrations make): alembic (~0.2 s to
        import) runs only for an older store. Processes opening a new or older store at once
        take turns (see ``_lock_schema``): one migrates, the others find it done."""
        try:
            with self.engine.connect() as connection:
                if _revision(connection) == HEAD_REVISION:
                    return
            with self.engine.connect() as connection:
                sqlite = connection.dialect.name == "sqlite"
                if sqlite:  # a table rebuilt by a migration must not cascade to its rows
                    _foreign_keys(connection, on=False)
                with connection.begin():
                    _lock_schema(connection)
                    if not _current_or_created(connection):
                        _upgrade(connection)
                if sqlite:
                    _foreign_keys(connection, on=True)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot migrate store {self.shown_url!r}: {exc}") from exc

    def session(self) -> Session:
        return self._sessions()

    def close(self) -> None:
        self.engine.dispose()


def _foreign_keys(connection: Connection, *, on: bool) -> None:
    """SQLite's foreign keys on or off; outside any transaction (inside one SQLite ignores it),
    so straight on the driver's connection, which SQLAlchemy has not begun one on."""
    connection.connection.driver_connection.execute(f"PRAGMA foreign_keys={int(on)}")  # type: ignore[union-attr]


def _check_foreign_keys(connection: Connection) -> None:
    """Fail (rolling the migration back) if it left a row pointing at nothing."""
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise StoreError(f"the migration would leave rows without their parent: {broken[:3]}")


def _lock_schema(connection: Connection) -> None:
    """Hold the schema for this transaction, so two processes never create or migrate the
    same tables together (``write_lock``)."""
    write_lock(connection, "ragmeter-schema")


def _revision(connection: Connection) -> str | None:
    """The store's schema revision; None when it has none (new, or not made by ragmeter)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _upgrade(connection: Connection) -> None:
    """alembic's upgrade to the newest revision, in the caller's transaction; on SQLite a
    migration leaving a row without its parent rolls it all back."""
    from alembic import command  # heavy; only an older store needs it
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")
    if connection.dialect.name == "sqlite":
        _check_foreign_keys(connection)


def _current_or_created(connection: Connection) -> bool:
    """Whether the database is at ``HEAD_REVISION``, after creating the newest schema (and
    stamping it, as alembic would) if it held no table at all."""
    revision = _revision(connection)
    if revision is not None:
        return revision == HEAD_REVISION
    if inspect(connection).get_table_names():  # tables, no revision: alembic says what it is
        return False
    from ragmeter.store import alert_models, flag_models, online_models, trace_models  # noqa: F401
    from ragmeter.store.models import Base  # (those modules' tables join its metadata)
    from ragmeter.store.search import create_row_search

    Base.metadata.create_all(connection)
    create_row_search(connection)
    connection.execute(
        text(
            "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
            "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
        )
    )
    connection.execute(
        text("INSERT INTO alembic_version (version_num) VALUES (:head)"), {"head": HEAD_REVISION}
    )
    return True


def _shown(url: str) -> str:
    """``url`` with its password (if any) masked: the form a message may show."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url  # not a URL SQLAlchemy reads: opening it fails before any connection


def _files_dir(url: str) -> Path:
    """``<db stem>-files`` beside a SQLite file; the data folder for any other database."""
    from ragmeter.config import ragmeter_home

    if url.startswith("sqlite"):
        path = url.split(":///", 1)[-1].split("?", 1)[0]
        if path and path != ":memory:":
            db = Path(path)
            return db.with_name(f"{db.stem}-files")
    return ragmeter_home() / "files"


_open: dict[str, Store] = {}
_open_lock = threading.Lock()


def open_store(url: str | None = None) -> Store:
    """The store at ``url`` (default: the configured one), opened once per process."""
    if url is None:
        from ragmeter.config import load_settings

        url = load_settings().store_url()
    with _open_lock:
        store = _open.get(url)
        if store is None:
            store = _open[url] = Store(url)
        return store
