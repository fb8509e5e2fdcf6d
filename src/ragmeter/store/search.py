"""Row search (``GET .../runs/{id}/rows?q=``) over the database's own text index, at a
bounded cost.

One document per row of a run, keyed by the run and the row: the row's result of the run's
first metric (every row has one, a null score too), holding the first ``SEARCH_CHARS``
characters of the row's query, its response and the target's answer (which a row's results
share). A run is indexed when it is first searched, and the results stored since at each
later search (``catch_up``; ``results_search_marks`` keeps how far each run is indexed: the
last row of ``results`` and the last batch of ``result_batches``), in transactions of at most
``_CHUNK`` rows: writing results costs nothing more, and only runs someone searches are
indexed. A row of ``results`` is indexed by one statement (``_to_index``); a batch's rows,
whose result is a score of a row whose texts are its dataset row's, from their rows.

SQLite: an FTS5 table ``results_search`` with the trigram tokenizer (a substring search, case
folded), a document's rowid its run's mark id times 2**32 plus its row, so a run's documents
are one range of rowids; triggers remove a row's document when its results are deleted, a
run's when its mark goes with the run, and redo a result's when it changes. A text of 3
characters or more is looked up in the index; a shorter one (a two-character Chinese word) is
compared with the capped texts of the run's documents only.

PostgreSQL: a table ``results_search`` (``run_id`` referencing the run, deleted with it,
``row_index`` and ``body``), triggers removing a row's document with its results and redoing
a changed result's, and a GIN index of the bodies' trigrams (``pg_trgm``'s ``gin_trgm_ops``,
without a pending list so its cost is known to the planner): a text of 3 characters or more
is ``ILIKE '%text%'`` over the index (a substring, case folded); a shorter one is compared
with the capped bodies of the run's documents (read by the table's key). ``pg_trgm`` is a
trusted extension (PostgreSQL 13+): a role with CREATE on the database makes it. When the
store's role cannot, the store is migrated all the same, a warning is logged once per
process, and every search compares the run's capped bodies (bounded like the rest); once a
superuser has run ``CREATE EXTENSION pg_trgm`` in that database, a server's first search
(after a restart) builds the index.
A run's results are inserted after its ``runs`` row is updated, in one transaction
(``ResultStore.commit_results``), so a run's result and batch ids become visible in order
and a mark never passes one not yet committed.

Either way one search is bounded in time (``bounded``: SQLite's progress handler, PostgreSQL's
``statement_timeout`` of each statement), and a search past it fails instead of holding a
connection."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import orjson
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from ragmeter.errors import LimitError
from ragmeter.store.locks import write_lock
from ragmeter.store.rowdata import input_value

__all__ = [
    "LIKE_ESCAPE",
    "SEARCH_CHARS",
    "bounded",
    "catch_up",
    "create_row_search",
    "drop_row_search",
    "forget_rows",
    "like_pattern",
    "matching_rows",
    "row_body",
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
_FORGET = "results_search_forget"
#: rows indexed per transaction when a run is caught up
_CHUNK = 5000
#: SQLite: a run's documents are the rowids from its mark's id times this, plus the row
_SPAN = 1 << 32
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
    """The one statement reading a run's results to index: the key and body of each result
    of ``:metric`` of run ``:run`` with an id in (``:last``, ``:upto``]."""
    key = ":base + r.row_index" if dialect == "sqlite" else "r.run_id, r.row_index"
    return (
        f"SELECT {key}, {_body('r', dialect)} FROM results AS r "
        "WHERE r.run_id = :run AND r.id > :last AND r.id <= :upto AND r.metric_name = :metric"
    )


def _anchor(r: str) -> str:
    """SQL: result ``r`` (``new``, ``old`` in a trigger) is of its run's indexed metric."""
    return f"{r}.metric_name = (SELECT m.metric FROM {_MARKS} AS m WHERE m.run_id = {r}.run_id)"


def _sqlite_key(r: str) -> str:
    """SQLite: the rowid of the document of result ``r``'s row."""
    return f"(SELECT m.id * {_SPAN} FROM {_MARKS} AS m WHERE m.run_id = {r}.run_id) + {r}.row_index"


def _sqlite_schema() -> list[str]:
    return [
        f"CREATE VIRTUAL TABLE {_TABLE} USING fts5(body, tokenize = 'trigram')",
        # fewer, larger merges: results are indexed in many transactions
        f"INSERT INTO {_TABLE} ({_TABLE}, rank) VALUES ('automerge', {_AUTOMERGE})",
        f"CREATE TABLE {_MARKS} (id INTEGER PRIMARY KEY, run_id VARCHAR(64) NOT NULL UNIQUE "
        "REFERENCES runs (id) ON DELETE CASCADE, metric VARCHAR(200) NOT NULL, "
        "last_id INTEGER NOT NULL, last_batch INTEGER NOT NULL)",
        # a run's documents go with its mark (deleted with the run)
        f"CREATE TRIGGER {_TABLE}_run AFTER DELETE ON {_MARKS} BEGIN DELETE FROM {_TABLE} "
        f"WHERE rowid BETWEEN old.id * {_SPAN} AND old.id * {_SPAN} + {_SPAN - 1}; END",
        f"CREATE TRIGGER {_TABLE}_delete AFTER DELETE ON results WHEN {_anchor('old')} "
        f"BEGIN DELETE FROM {_TABLE} WHERE rowid = {_sqlite_key('old')}; END",
        f"CREATE TRIGGER {_TABLE}_update AFTER UPDATE OF query, prediction, raw_dataset "
        f"ON results WHEN {_anchor('new')} BEGIN UPDATE {_TABLE} SET body = "
        f"{_body('new', 'sqlite')} WHERE rowid = {_sqlite_key('new')}; END",
    ]


def _postgresql_schema() -> list[str]:
    """The table, marks and triggers (the trigram index apart: ``_trigram_index``); a run's
    documents go with it (their foreign key)."""
    same = "run_id = {r}.run_id AND row_index = {r}.row_index AND " + _anchor("{r}")
    return [
        f"CREATE TABLE {_TABLE} (run_id VARCHAR(64) NOT NULL REFERENCES runs (id) "
        "ON DELETE CASCADE, row_index INTEGER NOT NULL, body TEXT NOT NULL, "
        "PRIMARY KEY (run_id, row_index))",
        f"CREATE TABLE {_MARKS} (run_id VARCHAR(64) NOT NULL PRIMARY KEY "
        "REFERENCES runs (id) ON DELETE CASCADE, metric VARCHAR(200) NOT NULL, "
        "last_id INTEGER NOT NULL, last_batch INTEGER NOT NULL)",
        f"CREATE FUNCTION {_REDO}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"UPDATE {_TABLE} SET body = {_body('NEW', 'postgresql')} WHERE "
        f"{same.format(r='NEW')}; RETURN NULL; END $$",
        f"CREATE FUNCTION {_FORGET}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"DELETE FROM {_TABLE} WHERE {same.format(r='OLD')}; RETURN NULL; END $$",
        f"CREATE TRIGGER {_TABLE}_update AFTER UPDATE OF query, prediction, raw_dataset "
        f"ON results FOR EACH ROW EXECUTE FUNCTION {_REDO}()",
        f"CREATE TRIGGER {_TABLE}_delete AFTER DELETE ON results "
        f"FOR EACH ROW EXECUTE FUNCTION {_FORGET}()",
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
    """Remove row search from the store: its tables, triggers and functions (of any revision
    that made them)."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        for name in ("insert", "delete", "update", "run"):
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {_TABLE}_{name}")
    elif dialect == "postgresql":
        for name in ("update", "delete"):
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {_TABLE}_{name} ON results")
        for function in (_REDO, _FORGET):
            connection.exec_driver_sql(f"DROP FUNCTION IF EXISTS {function}()")
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
    rows of ``results`` ``_CHUNK`` at a time, then batches of plain results one at a time,
    each in its own transaction under the store's write lock, so two searches never index
    one twice. A row indexed again (its result stored again) gets its new document."""
    if engine.dialect.name not in ("sqlite", "postgresql"):
        return
    _has_index(engine)
    while True:
        with engine.connect() as connection, connection.begin():
            write_lock(connection, "ragmeter-search")
            if not _index_next(connection, run_id, metric):
                return


def _mark(connection: sa.Connection, run_id: str, metric: str) -> tuple[int, int, int]:
    """(document base, last result id, last batch id) indexed of the run; marked now when
    it has none."""
    sqlite = connection.dialect.name == "sqlite"
    read = sa.text(
        f"SELECT {'id' if sqlite else '0'}, last_id, last_batch FROM {_MARKS} WHERE run_id = :run"
    )
    found = connection.execute(read, {"run": run_id}).first()
    if found is None:
        connection.execute(
            sa.text(
                f"INSERT INTO {_MARKS} (run_id, metric, last_id, last_batch) "
                "VALUES (:run, :metric, 0, 0)"
            ),
            {"run": run_id, "metric": metric},
        )
        found = connection.execute(read, {"run": run_id}).one()
    return int(found[0]) * _SPAN, int(found[1]), int(found[2])


def _index_next(connection: sa.Connection, run_id: str, metric: str) -> bool:
    """Index the next chunk of the run's rows of ``results``, else its next batch; whether
    there was one."""
    base, last, last_batch = _mark(connection, run_id, metric)
    upto = connection.execute(
        sa.text(
            "SELECT max(id) FROM (SELECT id FROM results WHERE run_id = :run "
            f"AND id > :last ORDER BY id LIMIT {_CHUNK}) AS chunk"
        ),
        {"run": run_id, "last": last},
    ).scalar()
    if upto is not None:
        chosen = {"run": run_id, "last": last, "upto": upto, "metric": metric, "base": base}
        _index_results(connection, chosen)
        connection.execute(
            sa.text(f"UPDATE {_MARKS} SET last_id = :upto WHERE run_id = :run"), chosen
        )
        return True
    batch = connection.execute(
        sa.text(
            "SELECT id, rows, prediction_field FROM result_batches WHERE run_id = :run "
            "AND metric_name = :metric AND id > :last ORDER BY id LIMIT 1"
        ),
        {"run": run_id, "metric": metric, "last": last_batch},
    ).first()
    if batch is None:
        return False
    rows = np.frombuffer(bytes(batch[1]), dtype="<i4").tolist()
    stored = connection.execute(
        sa.text(
            "SELECT d.position, d.data FROM dataset_rows AS d JOIN runs AS u "
            "ON u.dataset_id = d.dataset_id WHERE u.id = :run "
            "AND d.position BETWEEN :lo AND :hi"
        ),
        {"run": run_id, "lo": rows[0], "hi": rows[-1]},
    ).all()
    data: dict[int, str] = {int(position): text for position, text in stored}
    bodies = [(row, row_body(orjson.loads(data[row]), batch[2])) for row in rows if row in data]
    _put(connection, run_id, base, bodies)
    connection.execute(
        sa.text(f"UPDATE {_MARKS} SET last_batch = :batch WHERE run_id = :run"),
        {"batch": batch[0], "run": run_id},
    )
    return True


def _index_results(connection: sa.Connection, chosen: dict[str, Any]) -> None:
    """Documents of the rows of ``results`` ``chosen`` names (``_to_index``), each
    replacing its row's document of before (a row stored again)."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        connection.execute(
            sa.text(
                f"DELETE FROM {_TABLE} WHERE rowid IN (SELECT :base + r.row_index "
                "FROM results AS r WHERE r.run_id = :run AND r.id > :last "
                "AND r.id <= :upto AND r.metric_name = :metric)"
            ),
            chosen,
        )
        into = f"INSERT INTO {_TABLE} (rowid, body) {_to_index(dialect)}"
    else:
        into = (
            f"INSERT INTO {_TABLE} (run_id, row_index, body) {_to_index(dialect)} "
            "ON CONFLICT (run_id, row_index) DO UPDATE SET body = excluded.body"
        )
    connection.execute(sa.text(into), chosen)


def _put(connection: sa.Connection, run_id: str, base: int, bodies: list[tuple[int, str]]) -> None:
    """Documents (row, body) of the run, each replacing its row's document of before."""
    if not bodies:
        return
    if connection.dialect.name == "sqlite":
        keyed = [{"key": base + row, "body": body} for row, body in bodies]
        connection.execute(sa.text(f"DELETE FROM {_TABLE} WHERE rowid = :key"), keyed)
        connection.execute(
            sa.text(f"INSERT INTO {_TABLE} (rowid, body) VALUES (:key, :body)"), keyed
        )
        return
    connection.execute(
        sa.text(
            f"INSERT INTO {_TABLE} (run_id, row_index, body) VALUES (:run, :row, :body) "
            "ON CONFLICT (run_id, row_index) DO UPDATE SET body = excluded.body"
        ),
        [{"run": run_id, "row": row, "body": body} for row, body in bodies],
    )


def _text(value: Any) -> str:
    """A field as the searched text holds it: a string as itself, nothing as nothing, any
    other value as its JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def row_body(row: dict[str, Any], prediction_field: str | None) -> str:
    """The searched text of a plain result's row (``row``, its dataset row): its query, its
    response and what the metric was given as the answer (field ``prediction_field``), each
    cut to ``SEARCH_CHARS``, as ``_body`` makes it of a row of ``results``."""
    answer = input_value(row, prediction_field)
    parts = (row.get("query"), row.get("response"), answer)
    return "\n".join(_text(part)[:SEARCH_CHARS] for part in parts)


def forget_rows(session: Session, run_id: str, removed: Iterable[tuple[int, str]]) -> None:
    """Remove the documents of rows whose result of the run's indexed metric was removed
    (``removed``: row, metric), in the session's transaction; stored again, they are
    indexed again."""
    params = [{"run": run_id, "row": row, "metric": metric} for row, metric in removed]
    if not params:
        return
    dialect = session.get_bind().dialect.name
    anchor = f"(SELECT m.metric FROM {_MARKS} AS m WHERE m.run_id = :run) = :metric"
    if dialect == "sqlite":
        key = f"(SELECT m.id * {_SPAN} FROM {_MARKS} AS m WHERE m.run_id = :run) + :row"
        statement = f"DELETE FROM {_TABLE} WHERE rowid = {key} AND {anchor}"
    elif dialect == "postgresql":
        statement = f"DELETE FROM {_TABLE} WHERE run_id = :run AND row_index = :row AND {anchor}"
    else:
        return
    session.execute(sa.text(statement), params)


#: the escape character of ``like_pattern`` (pass it as ``ilike(..., escape=LIKE_ESCAPE)``)
LIKE_ESCAPE = "\\"


def like_pattern(text: str) -> str:
    """A LIKE pattern matching values that contain ``text`` as written: its ``%`` and ``_``
    are plain characters, not wildcards."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def matching_rows(session: Session, run_id: str, text: str) -> list[int]:
    """The rows of run ``run_id`` (indexed by ``catch_up``) holding ``text`` in the first
    ``SEARCH_CHARS`` characters of their query, response or answer, ignoring case, in row
    order. An answer stored as JSON escapes non-ASCII characters: it is also searched for
    ``text`` written that way."""
    forms = list(dict.fromkeys([text, json.dumps(text)[1:-1]]))
    engine = session.get_bind().engine
    params: dict[str, Any] = {"run": run_id}
    params.update({f"f{i}": form for i, form in enumerate(forms)})
    if engine.dialect.name == "sqlite":
        base = session.execute(
            sa.text(f"SELECT id * {_SPAN} FROM {_MARKS} WHERE run_id = :run"), params
        ).scalar()
        if base is None:
            return []
        params.update(lo=base, hi=base + _SPAN - 1)
        if len(text) >= _TRIGRAM:
            params["words"] = " OR ".join(_phrase(form) for form in forms)
            held = f"{_TABLE} MATCH :words"
        else:  # too short for a trigram: only the run's documents, each a capped text
            held = " OR ".join(f"instr(lower(body), lower(:f{i})) > 0" for i in range(len(forms)))
        query = f"SELECT rowid - :lo FROM {_TABLE} WHERE rowid BETWEEN :lo AND :hi AND ({held})"
    else:
        params.update({f"p{i}": like_pattern(form) for i, form in enumerate(forms)})
        held = " OR ".join(f"body ILIKE :p{i} ESCAPE '\\'" for i in range(len(forms)))
        if len(text) >= _TRIGRAM and _has_index(engine):  # the trigram index, every run's
            query = (
                f"WITH found AS MATERIALIZED (SELECT run_id, row_index FROM {_TABLE} "
                f"WHERE {held}) SELECT row_index FROM found WHERE run_id = :run"
            )
        else:  # only the run's documents (read by the table's key), each a capped text
            query = f"SELECT row_index FROM {_TABLE} WHERE run_id = :run AND ({held})"
    return sorted(int(row) for (row,) in session.execute(sa.text(query), params))


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
