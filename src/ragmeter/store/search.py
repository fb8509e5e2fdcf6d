"""Row search (``GET .../runs/{id}/rows?q=``) over the database's own text index, at a
bounded cost.

SQLite: an FTS5 table ``results_search`` with the trigram tokenizer (a substring search, case
folded, like the ``ILIKE '%q%'`` it replaces), one document per row of a run: its result of
the run's first metric (every row has one, a null score too; its rowid is that result's id),
holding the first ``SEARCH_CHARS`` characters of the row's query, its response and the
target's answer (which a row's results share). A run is indexed when it is first searched,
and the results stored since at each later search (``catch_up``; ``results_search_marks``
keeps how far each run is indexed), in transactions of ``_CHUNK`` results: writing results
costs nothing more, and only runs someone searches are indexed. Triggers remove or redo a
result's document when it is deleted or changed. A text of 3 characters or more is looked up
in the index; a shorter one (a two-character Chinese word) is compared with the capped texts
of the run's rows only.

PostgreSQL: no index yet (marked ``POSTGRESQL`` below): the same capped texts searched for
the lowered text (``strpos``), so a row costs at most ``SEARCH_CHARS`` characters a field;
the statement timeout bounds the whole.

Either way one search is bounded in time (``bounded``: SQLite's progress handler, PostgreSQL's
``statement_timeout``), and a search past it fails instead of holding a connection."""

from __future__ import annotations

import json
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
    "SEARCH_CHARS",
    "bounded",
    "catch_up",
    "create_row_search",
    "drop_row_search",
    "text_condition",
]

#: characters of each searched field (query, response, answer) a search looks at
SEARCH_CHARS = 2000
#: the trigram tokenizer finds texts of at least this many characters
_TRIGRAM = 3
#: segments FTS5 merges at once (its default, 4, merges often under many small commits)
_AUTOMERGE = 16
_TABLE = "results_search"
_MARKS = "results_search_marks"
#: results indexed per transaction when a run is caught up
_CHUNK = 5000
_FIELDS_SQL = (
    "substr(coalesce({r}.query, ''), 1, {n}) || char(10) || "
    "substr(coalesce({response}, ''), 1, {n}) || char(10) || "
    "substr(coalesce({prediction}, ''), 1, {n})"
)


def _body(r: str) -> str:
    """SQLite: the searched text of the result ``r`` (``new`` in a trigger): its query, its
    row's response (its own copy, else its run's dataset row) and the target's answer (a
    JSON string as its text, any other value as its JSON), each cut to ``SEARCH_CHARS``."""
    response = (
        f"CASE WHEN {r}.raw_dataset IS NULL THEN ("
        "SELECT CASE WHEN json_valid(d.data) THEN json_extract(d.data, '$.response') END "
        "FROM runs AS u JOIN dataset_rows AS d ON d.dataset_id = u.dataset_id "
        f"WHERE u.id = {r}.run_id AND d.position = {r}.row_index) "
        f"WHEN json_valid({r}.raw_dataset) THEN json_extract({r}.raw_dataset, '$.response') END"
    )
    prediction = (
        f"CASE WHEN json_valid({r}.prediction) AND json_type({r}.prediction) = 'text' "
        f"THEN json_extract({r}.prediction, '$') ELSE {r}.prediction END"
    )
    return _FIELDS_SQL.format(r=r, n=SEARCH_CHARS, response=response, prediction=prediction)


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
        f"ON results BEGIN UPDATE {_TABLE} SET body = {_body('new')} WHERE rowid = new.id; END",
    ]


def create_row_search(connection: sa.Connection) -> None:
    """Create the search index of a SQLite store and the triggers that keep it (nothing on
    other databases, which search the capped texts)."""
    if connection.dialect.name == "sqlite":
        for statement in _sqlite_schema():
            connection.exec_driver_sql(statement)


def catch_up(engine: sa.Engine, run_id: str, metric: str) -> None:
    """Index the run's rows not indexed yet: their results of ``metric``, the run's first
    (SQLite; nothing elsewhere), ``_CHUNK`` results at a time, each chunk in its own
    transaction under the store's write lock, so two searches never index one twice."""
    while True:
        with engine.connect() as connection, connection.begin():
            if connection.dialect.name != "sqlite":
                return
            write_lock(connection, "ragmeter-search")
            last = connection.exec_driver_sql(
                f"SELECT last_id FROM {_MARKS} WHERE run_id = ?", (run_id,)
            ).scalar()
            last = int(last or 0)
            upto = connection.exec_driver_sql(
                "SELECT max(id) FROM (SELECT id FROM results WHERE run_id = ? AND id > ? "
                f"ORDER BY id LIMIT {_CHUNK})",
                (run_id, last),
            ).scalar()
            if upto is None:
                return
            connection.exec_driver_sql(
                f"INSERT INTO {_TABLE} (rowid, body) SELECT r.id, {_body('r')} FROM results AS r "
                "WHERE r.run_id = ? AND r.id > ? AND r.id <= ? AND r.metric_name = ?",
                (run_id, last, upto, metric),
            )
            connection.exec_driver_sql(
                f"INSERT INTO {_MARKS} (run_id, last_id) VALUES (?, ?) "
                "ON CONFLICT (run_id) DO UPDATE SET last_id = excluded.last_id",
                (run_id, upto),
            )


def drop_row_search(connection: sa.Connection) -> None:
    if connection.dialect.name == "sqlite":
        for name in ("insert", "delete", "update"):
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {_TABLE}_{name}")
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {_MARKS}")
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {_TABLE}")


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def text_condition(dialect: str, anchor: Any, response: Any, text: str) -> Any:
    """SQL: the result ``anchor`` (its row's response ``response``, joined by the caller)
    holds ``text`` in the first ``SEARCH_CHARS`` characters of its query, response or answer,
    ignoring case. An answer stored as JSON escapes non-ASCII characters: it is also searched
    for ``text`` written that way."""
    forms = list(dict.fromkeys([text, json.dumps(text)[1:-1]]))
    if dialect == "sqlite":
        index = sa.table(_TABLE, sa.column("rowid"), sa.column("body"))
        row = aliased(ResultRow)
        same_row = [row.run_id == anchor.run_id, row.row_index == anchor.row_index]
        if len(text) >= _TRIGRAM:
            words = " OR ".join(_phrase(form) for form in forms)
            found = sa.select(index.c.rowid).where(sa.literal_column(_TABLE).op("MATCH")(words))
            return sa.exists(sa.select(1).select_from(row).where(*same_row, row.id.in_(found)))
        # too short for a trigram: only the run's own rows, each a capped text
        body = sa.func.lower(index.c.body)
        held = sa.or_(*(sa.func.instr(body, sa.func.lower(form)) > 0 for form in forms))
        joined = sa.select(1).select_from(row).join(index, index.c.rowid == row.id)
        return sa.exists(joined.where(*same_row, held))
    # POSTGRESQL: the capped texts compared one by one (no text index yet)
    fields = (anchor.query, response, sa.cast(anchor.prediction, sa.Text))
    capped = [sa.func.lower(sa.func.left(sa.func.coalesce(f, ""), SEARCH_CHARS)) for f in fields]
    return sa.or_(*(sa.func.strpos(c, sa.func.lower(form)) > 0 for c in capped for form in forms))


@contextmanager
def bounded(session: Session, seconds: float, setting: str) -> Iterator[None]:
    """The statements of ``session`` in this block stop after ``seconds`` together; a
    LimitError naming ``setting`` when they do."""
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
        raise LimitError(
            f"the search took more than {seconds:g} s; search for a longer text", setting=setting
        ) from None
    finally:
        if dialect == "sqlite":
            raw.set_progress_handler(None, 0)


def _timed_out(exc: DBAPIError) -> bool:
    """Whether a statement was stopped by ``bounded``: SQLite's 'interrupted', PostgreSQL's
    query_canceled (57014)."""
    return "interrupted" in str(exc.orig) or getattr(exc.orig, "sqlstate", None) == "57014"
