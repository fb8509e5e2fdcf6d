"""Issue 26, finding 1: row search (``GET .../runs/{id}/rows?q=``) was ``ILIKE '%q%'`` over
the whole stored texts: 5 rows of 1 MB and ``q = "a" * 199 + "b"`` took 13 s a GET, 42 at
once took every database connection and another key's run died in ``running``. A search now
looks the text up in the database's own index over the first characters of each field
(SQLite's FTS5, PostgreSQL's pg_trgm), stops after ``[server] search_seconds`` and takes a
turn among ``[server] max_searches``. Against a real ``ragmeter serve`` on either store, and
the index itself against real databases (new, and upgraded from revision 0010 with results
already stored); on PostgreSQL the plan uses the trigram index, and a role that may not
create the extension still gets a bounded search."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, event, text

from ragmeter.errors import LimitError
from ragmeter.store.db import _MIGRATIONS, Store
from ragmeter.store.search import SEARCH_CHARS, bounded, catch_up
from tests.integration.service import KEY, ServiceProcess, data, wait_run
from tests.pg import USER, PostgresServer

BIG = 1_000_000
ATTACK = "a" * 199 + "b"


def _big_rows() -> list[dict[str, object]]:
    return [
        {
            "query": f"row {i} " + "a" * BIG,
            "response": "a" * BIG + f" tail {i}",
            "retrieved_contexts": ["c"],
            "reference_contexts": ["c"],
        }
        for i in range(5)
    ]


def _sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def test_a_search_over_megabyte_rows_is_quick_and_42_at_once_starve_no_run(
    store_home: Path,
) -> None:
    home = store_home  # the store's ragmeter.toml names a PostgreSQL one
    with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
        config.write("\n[server]\nworkers = 2\n")
    body = {"scene_key": "dataset", "evaluate_metrics": ["hit_rate"], "datasets": _big_rows()}
    with ServiceProcess(home) as server, server.client() as http:
        run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
        url = f"/evaluate/runs/{run_id}/rows"
        started = time.monotonic()
        assert data(http.get(url, params={"q": ATTACK}, timeout=5))["total"] == 0
        assert time.monotonic() - started < 2.0  # was 13 s
        found = data(http.get(url, params={"q": "ROW 3 AAA"}))  # case folded, a substring
        assert [r["row_index"] for r in found["items"]] == [3]
        assert data(http.get(url, params={"q": "tail 4"}))["total"] == 0  # past SEARCH_CHARS

        def search(_: int) -> int:
            with httpx.Client(base_url=server.base, timeout=10) as other:
                headers = {"Authorization": f"Bearer {KEY}"}
                return other.get(url, params={"q": ATTACK}, headers=headers).status_code

        row = {"retrieved_contexts": ["c"], "reference_contexts": ["c"]}
        rows = [{"query": f"q{i}", **row} for i in range(200)]
        small = {"scene_key": "dataset", "evaluate_metrics": ["hit_rate", "mrr"], "datasets": rows}
        with ThreadPoolExecutor(42) as pool:
            answers = pool.map(search, range(42))
            other_run = data(http.post("/evaluate/runs", json=small), 202)["run_id"]
            statuses = list(answers)
        assert set(statuses) <= {200, 429} and statuses.count(200) >= 4, statuses
        assert wait_run(http, other_run, timeout=30)["state"] == "done"


def test_a_search_past_its_seconds_stops_naming_the_setting(store_url: str) -> None:
    store = Store(store_url)
    endless = text(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) "
        "SELECT count(*) FROM n"
    )
    with store.session() as session:
        started = time.monotonic()
        with (
            pytest.raises(LimitError, match=r"\[server\] search_seconds = 0.2"),
            bounded(session, 0.2, "[server] search_seconds = 0.2"),
        ):
            session.execute(endless)
        assert time.monotonic() - started < 2.0
        assert session.execute(text("SELECT 1")).scalar() == 1  # the connection still works
    store.close()


def _search(url: str, run_id: str, q: str) -> list[int]:
    from ragmeter.runs.views.browse import RowFilter, row_page

    store = Store(url)
    try:
        found, _ = row_page(store, run_id, ["mrr"], RowFilter(text=q), 0, 50)
    finally:
        store.close()
    return [row.row_index for row in found]


_RUN = text(
    "INSERT INTO runs (id, note, archived, lineage, state, scene_key, dataset_id, spec, "
    "request, total_rows, done_rows, resumable, usage) VALUES (:id, '', :no, '{}', 'done', "
    "'dataset', :dataset, '{}', '{}', :rows, :rows, :no, '{}')"
)
_RESULT = text(
    "INSERT INTO results (run_id, row_index, metric_name, score, prediction_cost, query, "
    "prediction) VALUES (:run, :i, :m, 1.0, 0, :q, :p)"
)


def _add_run(connection: Any, run_id: str, dataset: int, rows: int) -> None:
    connection.execute(_RUN, {"id": run_id, "no": False, "dataset": dataset, "rows": rows})


def test_results_stored_before_row_search_are_indexed_when_first_searched(
    store_url: str,
) -> None:
    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    rows = [{"query": "how to brew oolong", "response": "use boiling water"}, {"query": "绿茶水温"}]
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0010")
        connection.execute(text("INSERT INTO datasets (id, source, row_count) VALUES (1, '', 2)"))
        for position, row in enumerate(rows):
            connection.execute(
                text("INSERT INTO dataset_rows (dataset_id, position, data) VALUES (1, :p, :d)"),
                {"p": position, "d": json.dumps(row)},
            )
        _add_run(connection, "r", 1, 2)
        for index, row in enumerate(rows):
            for metric in ("mrr", "hit_rate"):
                values = {"run": "r", "i": index, "m": metric, "q": row["query"]}
                connection.execute(_RESULT, {**values, "p": json.dumps("about Ray")})
    engine.dispose()
    assert _search(url, "r", "BOILING") == [0]  # the dataset row's response
    assert _search(url, "r", "水温") == [1]  # two characters: the capped texts of the run
    assert _search(url, "r", "about ray") == [0, 1]  # the target's answer
    assert _search(url, "r", "100%") == []  # ILIKE's wildcards are searched for as text
    store = Store(url)
    with store.engine.begin() as connection:
        indexed = connection.execute(text("SELECT count(*), max(length(body)) FROM results_search"))
        assert tuple(indexed.one()) == (2, len("how to brew oolong\nuse boiling water\nabout Ray"))
        connection.execute(  # a changed result's text is searched as it is now
            text("UPDATE results SET query = 'steep sencha' WHERE run_id = 'r' AND row_index = 1")
        )
    assert _search(url, "r", "SENCHA") == [1] and _search(url, "r", "水温") == []
    with store.engine.begin() as connection:
        connection.execute(text("DELETE FROM results WHERE row_index = 0"))  # as resume does
        assert connection.execute(text("SELECT count(*) FROM results_search")).scalar() == 1
        connection.execute(text("DELETE FROM runs WHERE id = 'r'"))  # its results go, and so
        assert connection.execute(text("SELECT count(*) FROM results_search")).scalar() == 0
    store.close()


def test_a_rows_searched_text_is_capped(store_url: str) -> None:
    from ragmeter.runs.storage.store import RunStore

    store = Store(store_url)
    runs = RunStore(store)
    rows = [{"query": "x" * 5000 + "needle", "response": "y" * 3000}]
    dataset = runs.add_dataset(rows)
    with store.engine.begin() as connection:
        _add_run(connection, "c", dataset.id, 1)
        values = {"run": "c", "i": 0, "m": "mrr", "q": rows[0]["query"], "p": "null"}
        connection.execute(_RESULT, values)
    catch_up(store.engine, "c", "mrr")  # as the run's first search does
    with store.engine.begin() as connection:
        body = connection.execute(text("SELECT body FROM results_search")).scalar()
    store.close()
    assert body == "x" * SEARCH_CHARS + "\n" + "y" * SEARCH_CHARS + "\nnull"
    assert _search(store_url, "c", "needle") == []


def _search_schema(url: str) -> list[Any]:
    """What the store holds for row search: SQLite's tables and triggers; PostgreSQL's
    indexes, triggers and the trigger's function."""
    if _sqlite(url):
        listed = ["SELECT type, name, sql FROM sqlite_master WHERE name LIKE 'results_search%'"]
    else:
        listed = [
            "SELECT tablename, indexdef FROM pg_indexes WHERE tablename LIKE 'results_search%'",
            "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal",
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc AS p "
            "JOIN pg_namespace AS n ON n.oid = p.pronamespace WHERE n.nspname = 'public' "
            "AND p.proname LIKE 'results_search%'",
        ]
    engine = create_engine(url)
    with engine.connect() as connection:
        found = [sorted(map(tuple, connection.execute(text(q)).all())) for q in listed]
    engine.dispose()
    return found


def test_a_new_store_gets_the_triggers_the_migration_makes(
    store_url: str, more_urls: Callable[[str], str]
) -> None:
    migrated = more_urls("migrated")
    engine = create_engine(migrated)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    engine.dispose()
    Store(store_url).close()
    schemas = [_search_schema(url) for url in (migrated, store_url)]
    assert schemas[0] == schemas[1]
    if _sqlite(store_url):
        assert len(schemas[0][0]) >= 4
    else:  # the key's index and the trigram one; the trigger and its function
        indexes, triggers, functions = schemas[0]
        assert any("gin_trgm_ops" in definition for _, definition in indexes), indexes
        assert [name for name, _ in triggers] == ["results_search_delete", "results_search_update"]
        assert len(functions) == 2


def test_revision_0018_goes_down_and_up_again(store_url: str) -> None:
    """On PostgreSQL 0018 makes the search table, its trigger and index, and its downgrade
    removes them; on SQLite it changes nothing (0016 made FTS5's)."""
    engine = create_engine(store_url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    listed = []
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        for revision in ("head", "0017", "head"):
            if revision == "head":
                command.upgrade(config, revision)
            else:
                command.downgrade(config, revision)
            listed.append(_search_tables(connection))
    engine.dispose()
    if _sqlite(store_url):
        assert listed[0] == listed[1] == listed[2] and "results_search" in listed[0]
    else:
        assert listed[0] == listed[2] == ["results_search", "results_search_marks"]
        assert listed[1] == []


def _search_tables(connection: Any) -> list[str]:
    from sqlalchemy import inspect

    return sorted(n for n in inspect(connection).get_table_names() if n.startswith("results_s"))


def _bulk_row(run_id: str, i: int) -> dict[str, Any]:
    """Row ``i``'s result: a question of 40 words (row 7's also 'needle'), an answer."""
    words = " ".join(f"w{i * 7919 * j % 100_003}" for j in range(1, 41))
    query = f"question {i} {words}" + (" needle" if i == 7 else "")
    return {"run": run_id, "i": i, "m": "mrr", "q": query, "p": json.dumps(f"answer {i}")}


def _bulk_run(url: str, run_id: str, rows: int) -> None:
    """A run of ``rows`` rows (one result each, of mrr) whose row 7 alone says 'needle',
    indexed for search, the tables' statistics up to date."""
    from ragmeter.runs.storage.store import RunStore

    store = Store(url)
    dataset = RunStore(store).add_dataset([{"query": "q"}] * rows)
    with store.engine.begin() as connection:
        _add_run(connection, run_id, dataset.id, rows)
        connection.execute(_RESULT, [_bulk_row(run_id, i) for i in range(rows)])
    catch_up(store.engine, run_id, "mrr")  # as its first search does
    with store.engine.begin() as connection:
        connection.execute(text("ANALYZE"))  # as autovacuum does
    store.close()


def _plans(url: str, run_id: str, q: str) -> list[str]:
    """The plans PostgreSQL makes for the statements of a search of ``q`` that compare the
    rows' texts (EXPLAIN of each, with its parameters)."""
    store = Store(url)
    seen: list[tuple[str, Any]] = []

    def record(_c: Any, _cursor: Any, statement: str, parameters: Any, *_a: Any) -> None:
        if "FROM results_search" in statement and "body" in statement:
            seen.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    from ragmeter.runs.views.browse import RowFilter, row_page

    found, _ = row_page(store, run_id, ["mrr"], RowFilter(text=q), 0, 50)
    event.remove(store.engine, "before_cursor_execute", record)
    plans = []
    with store.engine.connect() as connection:
        raw: Any = connection.connection.driver_connection
        for statement, parameters in seen:
            plan = raw.execute("EXPLAIN " + statement, parameters).fetchall()
            plans.append("\n".join(line for (line,) in plan))
    store.close()
    assert [row.row_index for row in found] == ([7] if "needle".startswith(q) else [])
    return plans


def test_postgresql_looks_a_text_of_3_characters_up_in_the_trigram_index(
    postgres: PostgresServer,
) -> None:
    """A text of 3 characters or more: the trigram index; a shorter one: only the run's own
    rows' bodies (looked up by the table's key, the run and row), never every run's."""
    url = postgres.database()
    _bulk_run(url, "bulk", 3000)
    _bulk_run(url, "small", 20)
    for q in ("needle", "nee"):
        plans = _plans(url, "bulk", q)
        assert plans and all("ix_results_search_body" in plan for plan in plans), plans
    short = _plans(url, "small", "ne")
    assert short and all(
        "Index Cond: ((run_id)::text = " in plan
        and "ix_results_search_body" not in plan
        and "Seq Scan on results_search" not in plan
        for plan in short
    ), short


def test_a_role_that_may_not_create_pg_trgm_gets_a_bounded_search_and_one_warning(
    postgres: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The store's role lacks CREATE on its database, so it cannot create the extension: the
    store is made all the same, one warning says so, searches scan the run's capped texts;
    once a superuser has created pg_trgm, a server's first search builds the index."""
    import psycopg

    url = postgres.database()
    with psycopg.connect(postgres.dsn(url), autocommit=True) as admin:
        admin.execute("CREATE ROLE plain LOGIN")
        admin.execute("GRANT CREATE ON SCHEMA public TO plain")
    plain = url.replace(f"//{USER}@", "//plain@")
    with caplog.at_level(logging.WARNING, logger="ragmeter.store.search"):
        _bulk_run(plain, "bulk", 300)
        assert _search(plain, "bulk", "NEEDLE") == [7]
        assert _search(plain, "bulk", "le") == [7]
    warned = [r for r in caplog.records if "pg_trgm" in r.getMessage()]
    assert len(warned) == 1 and "CREATE EXTENSION" in warned[0].getMessage()
    assert not any("ix_results_search_body" in plan for plan in _plans(plain, "bulk", "needle"))
    with psycopg.connect(postgres.dsn(url), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION pg_trgm")
    code = (  # a server started now: its first search builds the index
        "import sys\nfrom ragmeter.runs.views.browse import RowFilter, row_page\n"
        "from ragmeter.store.db import Store\n"
        f"store = Store({plain!r})\n"
        "found, _ = row_page(store, 'bulk', ['mrr'], RowFilter(text='needle'), 0, 50)\n"
        "print([row.row_index for row in found])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[7]"
    engine = create_engine(url)
    with engine.connect() as connection:
        made = connection.execute(text("SELECT to_regclass('ix_results_search_body')")).scalar()
    engine.dispose()
    assert made is not None
