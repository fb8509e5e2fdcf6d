"""Row search (``GET .../runs/{id}/rows?q=``) over the database's own text index, at a
bounded cost.

One document per row of a run: its result of the run's first metric (every row has one, a
null score too), holding the first ``SEARCH_CHARS`` characters of the row's query, its
response and the target's answer (which a row's results share). A run is indexed when it is
first searched, and the results stored since at each later search (``catch_up``;
``results_search_marks`` keeps how far each run is indexed), in transactions of ``_CHUNK``
results: writing results costs nothing more, and only runs someone searches are indexed.
Which of a run's results are read for it is ``_to_index``'s one statement.

SQLite: an FTS5 table ``results_search`` with the trigram tokenizer (a substring search, case
folded), its rowid the result's id; triggers remove or redo a result's document when it is
deleted or changed. A text of 3 characters or more is looked up in the index; a shorter one
(a two-character Chinese word) is compared with the capped texts of the run's rows only.

PostgreSQL (revision 0018): a table ``results_search`` (``result_id`` referencing the result,
deleted with it, and ``body``), a trigger redoing a changed result's body, and a GIN index of
the bodies' trigrams (``pg_trgm``'s ``gin_trgm_ops``, without a pending list so its cost is
known to the planner): a text of 3 characters or more is ``ILIKE '%text%'`` over the index (a
substring, case folded); a shorter one is compared with the capped bodies joined to the run's
rows (the planner reads them by result id; in a store too small to matter it may scan all).
``pg_trgm`` is a trusted extension (PostgreSQL 13+): a role with CREATE on the database makes
it. When the store's role cannot, the store is migrated all the same, a warning is logged once
per process, and every search compares the run's capped bodies (bounded like the rest); once
a superuser has run ``CREATE EXTENSION pg_trgm`` in that database, a server's first search
(after a restart) builds the index.
A run's results are inserted after its ``runs`` row is updated, in one transaction
(``ResultStore.commit_results``), so a run's result ids become visible in order and
``last_id`` never passes one not yet committed.

Either way one search is bounded in time (``bounded``: SQLite's progress handler, PostgreSQL's
``statement_timeout`` of each statement), and a search past it fails instead of holding a
connection."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, aliased

from ragmeter.errors import LimitError
from ragmeter.store.locks import write_lock
from ragmeter.store.models import ResultRow

__all__ = [
    "LIKE_ESCAPE",
    "SEARCH_CHARS",
    "bounded",
    "catch_up",
    "create_row_search",
    "drop_row_search",
    "like_pattern",
    "text_condition",
]

log = logging.getLogger(__name__)

#: characters of each searched field (query, response, answer) a search looks at
SEARCH_CHARS = 2000
#: the trigram tokenizer (and index) finds texts of at least this many characters
_TRIGRAM = 3
#: segments FTS5 merges at once (its default, 4, merges often under many small commits)
_AUTOMERGE = 16
_TABLE = "results_search"
_MARKS = "results_search_marks"
#: PostgreSQL: the trigram index of the bodies, and the function its trigger runs
_INDEX = "ix_results_search_body"
_REDO = "results_search_redo"
#: results indexed per transaction when a run is caught up
_CHUNK = 5000
_FIELDS_SQL = (
    "substr(coalesce({r}.query, ''), 1, {n}) || {newline} || "
    "substr(coalesce({response}, ''), 1, {n}) || {newline} || "
    "substr(coalesce({prediction}, ''), 1, {n})"
)


def _body(r: str, dialect: str) -> str:
    """The searched text of the result ``r`` (``new`` in a trigger): its query, its row's
    response (its own copy, else its run's dataset row) and the target's answer (a JSON
    string as its text, any other value as its JSON), each cut to ``SEARCH_CHARS``."""
    stored = (
        "FROM runs AS u JOIN dataset_rows AS d ON d.dataset_id = u.dataset_id "
        f"WHERE u.id = {r}.run_id AND d.position = {r}.row_index"
    )
    if dialect == "sqlite":
        response = (
            f"CASE WHEN {r}.raw_dataset IS NULL THEN ("
            f"SELECT CASE WHEN json_valid(d.data) THEN json_extract(d.data, '$.response') END "
            f"{stored}) WHEN json_valid({r}.raw_dataset) "
            f"THEN json_extract({r}.raw_dataset, '$.response') END"
        )
        prediction = (
            f"CASE WHEN json_valid({r}.prediction) AND json_type({r}.prediction) = 'text' "
            f"THEN json_extract({r}.prediction, '$') ELSE {r}.prediction END"
        )
        newline = "char(10)"
    else:
        response = (
            f"CASE WHEN {r}.raw_dataset IS NULL THEN (SELECT CAST(d.data AS JSON) ->> 'response' "
            f"{stored}) ELSE CAST({r}.raw_dataset AS JSON) ->> 'response' END"
        )
        prediction = (
            f"CASE WHEN json_typeof({r}.prediction) = 'string' THEN {r}.prediction #>> '{{}}' "
            f"ELSE CAST({r}.prediction AS TEXT) END"
        )
        newline = "chr(10)"
    return _FIELDS_SQL.format(
        r=r, n=SEARCH_CHARS, response=response, prediction=prediction, newline=newline
    )


def _to_index(dialect: str) -> str:
    """The one statement reading a run's results to index: the id and body of each result of
    ``:metric`` of run ``:run`` with an id in (``:last``, ``:upto``]."""
    return (
        f"SELECT r.id, {_body('r', dialect)} FROM results AS r "
        "WHERE r.run_id = :run AND r.id > :last AND r.id <= :upto AND r.metric_name = :metric"
    )


def _sqlite_schema() -> list[str]:
    return [
        f"CREATE VIRTUAL TABLE {_TABLE} USING fts5(body, tokenize = 'trigram')",
        # fewer, larger merges: results are indexed in many transactions
        f"INSERT INTO {_TABLE} ({_TABLE}, rank) VALUES ('automerge', {_AUTOMERGE})",
        f"CREATE TABLE {_MARKS} (run_id VARCHAR(64) NOT NULL PRIMARY KEY "
        "REFERENCES runs (id) ON DELETE CASCADE, last_id INTEGER NOT NULL)",
        f"CREATE TRIGGER {_TABLE}_delete AFTER DELETE ON results "
        f"BEGIN DELETE FROM {_TABLE} WHERE rowid = old.id; END",
        f"CREATE TRIGGER {_TABLE}_update AFTER UPDATE OF query, prediction, raw_dataset "
        f"ON results BEGIN UPDATE {_TABLE} SET body = {_body('new', 'sqlite')} "
        "WHERE rowid = new.id; END",
    ]


def _postgresql_schema() -> list[str]:
    """The table, marks and trigger (the trigram index apart: ``_trigram_index``); a deleted
    result's body goes with it (its foreign key)."""
    return [
        f"CREATE TABLE {_TABLE} (result_id INTEGER NOT NULL PRIMARY KEY "
        "REFERENCES results (id) ON DELETE CASCADE, body TEXT NOT NULL)",
        f"CREATE TABLE {_MARKS} (run_id VARCHAR(64) NOT NULL PRIMARY KEY "
        "REFERENCES runs (id) ON DELETE CASCADE, last_id INTEGER NOT NULL)",
        f"CREATE FUNCTION {_REDO}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"UPDATE {_TABLE} SET body = {_body('NEW', 'postgresql')} WHERE result_id = NEW.id; "
        "RETURN NULL; END $$",
        f"CREATE TRIGGER {_TABLE}_update AFTER UPDATE OF query, prediction, raw_dataset "
        f"ON results FOR EACH ROW EXECUTE FUNCTION {_REDO}()",
    ]


def create_row_search(connection: sa.Connection) -> None:
    """Create the search table of the store, the triggers that keep it and (PostgreSQL, when
    ``pg_trgm`` can be had) its trigram index."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        statements = _sqlite_schema()
    elif dialect == "postgresql":
        statements = _postgresql_schema()
    else:
        return
    for statement in statements:
        connection.exec_driver_sql(statement)
    if dialect == "postgresql":
        _trigram_index(connection)


def drop_row_search(connection: sa.Connection) -> None:
    dialect = connection.dialect.name
    if dialect == "sqlite":
        for name in ("insert", "delete", "update"):
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {_TABLE}_{name}")
    elif dialect == "postgresql":
        connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {_TABLE}_update ON results")
        connection.exec_driver_sql(f"DROP FUNCTION IF EXISTS {_REDO}()")
    else:
        return
    connection.exec_driver_sql(f"DROP TABLE IF EXISTS {_MARKS}")
    connection.exec_driver_sql(f"DROP TABLE IF EXISTS {_TABLE}")


_indexed: dict[str, bool] = {}
_indexed_lock = threading.Lock()


def _store_key(engine: sa.Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def _trigram_index(connection: sa.Connection) -> bool:
    """PostgreSQL: make ``pg_trgm`` and the bodies' trigram index if either is missing, in a
    savepoint; whether the index is there after (kept for ``_has_index``). When it cannot be
    made (no privilege to create the extension), a warning says what searches do instead."""
    key = _store_key(connection.engine)
    try:
        with connection.begin_nested():
            connection.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            connection.exec_driver_sql(
                f"CREATE INDEX IF NOT EXISTS {_INDEX} ON {_TABLE} "
                "USING gin (body gin_trgm_ops) WITH (fastupdate = off)"
            )  # no pending list: a search never reads the bodies indexed since the last vacuum
            # one by one, and the planner (which counts it) picks the index
    except DBAPIError as exc:
        reason = str(exc.orig).splitlines()[0] if exc.orig is not None else str(exc)
        log.warning(
            "row search: PostgreSQL's pg_trgm extension cannot be created in this database "
            "(%s): searches compare each run's texts (their first %d characters a field) one "
            "by one, within [server] search_seconds. A superuser can run 'CREATE EXTENSION "
            "pg_trgm;' in it; the first search after a restart then builds the index",
            reason,
            SEARCH_CHARS,
        )
        _indexed[key] = False
        return False
    _indexed[key] = True
    return True


def _has_index(engine: sa.Engine) -> bool:
    """Whether searches of the store at ``engine`` use a text index: always on SQLite; on
    PostgreSQL when the trigram index is there: asked once per process, and made then if it
    was not and can be (``_trigram_index``, which a migration in this process ran already),
    under the store's search lock (two servers starting at once make it once)."""
    if engine.dialect.name != "postgresql":
        return True
    key = _store_key(engine)
    with _indexed_lock:
        if key not in _indexed:
            with engine.connect() as connection, connection.begin():
                write_lock(connection, "ragmeter-search")
                found = connection.exec_driver_sql(f"SELECT to_regclass('{_INDEX}')").scalar()
                _indexed[key] = found is not None or _trigram_index(connection)
        return _indexed[key]


def catch_up(engine: sa.Engine, run_id: str, metric: str) -> None:
    """Index the run's rows not indexed yet: their results of ``metric``, the run's first,
    ``_CHUNK`` results at a time, each chunk in its own transaction under the store's write
    lock, so two searches never index one twice."""
    if engine.dialect.name not in ("sqlite", "postgresql"):
        return
    _has_index(engine)
    while True:
        with engine.connect() as connection, connection.begin():
            write_lock(connection, "ragmeter-search")
            marked = sa.text(f"SELECT last_id FROM {_MARKS} WHERE run_id = :run")
            last = int(connection.execute(marked, {"run": run_id}).scalar() or 0)
            upto = connection.execute(
                sa.text(
                    "SELECT max(id) FROM (SELECT id FROM results WHERE run_id = :run "
                    f"AND id > :last ORDER BY id LIMIT {_CHUNK}) AS chunk"
                ),
                {"run": run_id, "last": last},
            ).scalar()
            if upto is None:
                return
            chosen = {"run": run_id, "last": last, "upto": upto, "metric": metric}
            connection.execute(
                sa.text(
                    f"INSERT INTO {_TABLE} ({_key(engine)}, body) {_to_index(engine.dialect.name)}"
                ),
                chosen,
            )
            connection.execute(
                sa.text(
                    f"INSERT INTO {_MARKS} (run_id, last_id) VALUES (:run, :upto) "
                    "ON CONFLICT (run_id) DO UPDATE SET last_id = excluded.last_id"
                ),
                chosen,
            )


def _key(engine: sa.Engine) -> str:
    """The search table's column holding a document's result id."""
    return "rowid" if engine.dialect.name == "sqlite" else "result_id"


#: the escape character of ``like_pattern`` (pass it as ``ilike(..., escape=LIKE_ESCAPE)``)
LIKE_ESCAPE = "\\"


def like_pattern(text: str) -> str:
    """A LIKE pattern matching values that contain ``text`` as written: its ``%`` and ``_``
    are plain characters, not wildcards."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def text_condition(bind: sa.Engine | sa.Connection, anchor: Any, text: str) -> Any:
    """SQL: the result ``anchor`` (of the store at ``bind``) holds ``text`` in the first
    ``SEARCH_CHARS`` characters of its query, response or answer, ignoring case. An answer
    stored as JSON escapes non-ASCII characters: it is also searched for ``text`` written
    that way."""
    forms = list(dict.fromkeys([text, json.dumps(text)[1:-1]]))
    engine = bind.engine
    dialect = engine.dialect.name
    key = _key(engine)
    index = sa.table(_TABLE, sa.column(key), sa.column("body"))
    row = aliased(ResultRow)
    same_row = [row.run_id == anchor.run_id, row.row_index == anchor.row_index]
    if dialect == "sqlite":
        if len(text) >= _TRIGRAM:
            words = " OR ".join(_phrase(form) for form in forms)
            found = sa.select(index.c.rowid).where(sa.literal_column(_TABLE).op("MATCH")(words))
            return sa.exists(sa.select(1).select_from(row).where(*same_row, row.id.in_(found)))
        body = sa.func.lower(index.c.body)
        held = sa.or_(*(sa.func.instr(body, sa.func.lower(form)) > 0 for form in forms))
    else:
        held = sa.or_(
            *(index.c.body.ilike(like_pattern(form), escape=LIKE_ESCAPE) for form in forms)
        )
        if len(text) >= _TRIGRAM and _has_index(engine):
            found = sa.select(index.c.result_id).where(held)
            return sa.exists(sa.select(1).select_from(row).where(*same_row, row.id.in_(found)))
    # too short for a trigram (or no index): only the run's own rows, each a capped text
    joined = sa.select(1).select_from(row).join(index, index.c[key] == row.id)
    return sa.exists(joined.where(*same_row, held))


@contextmanager
def bounded(session: Session, seconds: float, setting: str) -> Iterator[None]:
    """The statements of ``session`` in this block stop after ``seconds`` (SQLite: together;
    PostgreSQL: each, its ``statement_timeout``, set back after); a LimitError naming
    ``setting`` when one does, the session rolled back on PostgreSQL (its transaction failed)
    and usable again."""
    connection = session.connection()
    dialect = connection.dialect.name
    raw: Any = connection.connection.driver_connection
    if dialect == "sqlite":
        deadline = time.monotonic() + seconds
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    elif dialect == "postgresql":
        connection.exec_driver_sql(f"SET LOCAL statement_timeout = {max(1, int(seconds * 1000))}")
    try:
        yield
    except DBAPIError as exc:
        if not _timed_out(exc):
            raise
        if dialect == "postgresql":
            session.rollback()
        raise LimitError(
            f"the search took more than {seconds:g} s; search for a longer text", setting=setting
        ) from None
    else:
        if dialect == "postgresql":
            connection.exec_driver_sql("SET LOCAL statement_timeout TO DEFAULT")
    finally:
        if dialect == "sqlite":
            raw.set_progress_handler(None, 0)


def _timed_out(exc: DBAPIError) -> bool:
    """Whether a statement was stopped by ``bounded``: SQLite's 'interrupted', PostgreSQL's
    query_canceled (57014)."""
    return "interrupted" in str(exc.orig) or getattr(exc.orig, "sqlstate", None) == "57014"
