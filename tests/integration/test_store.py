"""The store: migrations bring an older database forward without losing its rows, on SQLite
and on PostgreSQL (each test using ``store_url`` runs on both)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.views.run_view import run_info
from ragmeter.store.db import _MIGRATIONS, HEAD_REVISION, Store


def _sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def _broken_foreign_keys(connection: Any) -> list[Any]:
    """Rows pointing at no parent (SQLite checks foreign keys only when asked; PostgreSQL
    never lets one in)."""
    if connection.dialect.name != "sqlite":
        return []
    return list(connection.execute(text("PRAGMA foreign_key_check")).all())


def _follow_ids(connection: Any, table: str) -> None:
    """After rows inserted with their ids, PostgreSQL's id sequence goes on from the largest
    (SQLite's does by itself), as it would in a store whose rows got their ids from it."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM {table}")
        )


def _migrate(url: str, step: Callable[[Config, str], None], revision: str) -> None:
    """alembic's ``step`` (``command.upgrade`` or ``downgrade``) to ``revision`` on the
    database at ``url``, in one transaction."""
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        step(config, revision)
    engine.dispose()


def test_a_new_sqlite_store_has_16_kib_pages_in_wal_mode(tmp_path: Path) -> None:
    """A new store's file gets 16 KiB pages before its first table (bulk writes of results
    are faster with them), then WAL."""
    store = Store(f"sqlite:///{tmp_path / 'new.db'}")
    with store.engine.connect() as connection:
        assert connection.execute(text("PRAGMA page_size")).scalar() == 16384
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert "results" in inspect(connection).get_table_names()
    store.close()


def test_a_judge_cache_database_gains_the_knowledge_tables(store_url: str, tmp_path: Path) -> None:
    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.execute(
            text(
                "INSERT INTO judge_cache (key, model, base_url, content, prompt_tokens, "
                "completion_tokens) VALUES ('k', 'm', 'u', '{}', 1, 2)"
            )
        )
    engine.dispose()
    store = Store(url)
    tables = set(inspect(store.engine).get_table_names())
    assert {"spaces", "documents", "chunks", "prompts", "apps", "judge_cache"} <= tables
    assert {"datasets", "runs", "results"} <= tables
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT content FROM judge_cache")).scalar() == "{}"
        if _sqlite(url):
            assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            # a file with content keeps its pages (only a new file gets 16 KiB ones)
            assert connection.execute(text("PRAGMA page_size")).scalar() == 4096
        assert (
            connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
            == HEAD_REVISION
        )
    if _sqlite(url):
        assert store.files_dir == tmp_path / "home" / "ragmeter-files"
    store.close()


def test_results_stored_before_error_kinds_keep_a_null_kind(store_url: str) -> None:
    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0003")
        connection.execute(
            text("INSERT INTO datasets (id, source, row_count, rows) VALUES (1, 'x', 1, '[]');")
        )
        connection.execute(
            text(
                "INSERT INTO runs (id, state, scene_key, dataset_id, spec, request, total_rows, "
                "done_rows, resumable, usage) VALUES ('r', 'done', 'dataset', 1, '{}', '{}', 1, "
                "1, false, '{}')"
            )
        )
        connection.execute(
            text(
                "INSERT INTO results (run_id, row_index, metric_name, score, error, "
                "prediction_cost, query, raw_dataset) VALUES ('r', 0, 'mrr', NULL, 'down', 0, "
                "'q', '{}')"
            )
        )
    engine.dispose()
    store = Store(url)
    with store.engine.connect() as connection:
        found = connection.execute(text("SELECT error, error_kind FROM results")).all()
    assert [tuple(row) for row in found] == [("down", None)]
    store.close()


def test_datasets_stored_as_arrays_move_to_one_row_per_row(store_url: str) -> None:
    """A store of revision 0003 keeps each dataset's rows as one JSON array (older ones may
    hold NaN); upgrading moves them to ``dataset_rows`` in their order, keeps the counts, the
    runs that use them and their ids, and drops the array column."""
    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    rows = [{"query": f"q{i}", "metadata": {"n": i, "zh": "检索"}} for i in range(12_345)]
    odd = '[{"query": "b", "metadata": {"x": NaN, "y": [-Infinity, 1.5]}}, {"query": "a"}]'
    if not _sqlite(url):  # PostgreSQL's json never held NaN
        odd = odd.replace("NaN", "null").replace("-Infinity", "null")
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0003")
        insert = text(
            "INSERT INTO datasets (id, name, source, row_count, rows) VALUES (:i, :n, 's', :c, :r)"
        )
        connection.execute(insert, {"i": 3, "n": "big", "c": len(rows), "r": json.dumps(rows)})
        connection.execute(insert, {"i": 5, "n": None, "c": 2, "r": odd})
        connection.execute(insert, {"i": 7, "n": "empty", "c": 0, "r": "[]"})
        connection.execute(
            text(
                "INSERT INTO runs (id, state, scene_key, dataset_id, spec, request, total_rows, "
                "done_rows, resumable, usage) VALUES ('r', 'done', 'dataset', 5, '{}', '{}', 2, "
                "2, false, '{}')"
            )
        )
        _follow_ids(connection, "datasets")
    engine.dispose()
    store = Store(url)
    runs = RunStore(store)
    assert list(runs.iter_dataset_rows("big")) == rows
    assert runs.dataset_rows("big", 12_340, 100) == rows[12_340:]
    assert list(runs.iter_dataset_rows(5)) == [
        {"query": "b", "metadata": {"x": None, "y": [None, 1.5]}},  # NaN stored as null
        {"query": "a"},
    ]
    assert list(runs.iter_dataset_rows("empty")) == []
    found, total = runs.datasets()
    assert total == 2 and [(d.id, d.name, d.row_count) for d in found] == [
        (7, "empty", 0),
        (3, "big", len(rows)),
    ]
    assert runs.get("r").dataset_id == 5
    assert "rows" not in {c["name"] for c in inspect(store.engine).get_columns("datasets")}
    with store.engine.connect() as connection:
        assert _broken_foreign_keys(connection) == []
    added = runs.add_dataset([{"query": "new"}], name="after")
    assert added.id == 8 and runs.dataset_rows("after", 0, 10) == [{"query": "new"}]
    store.close()


def _where(index: dict[str, Any]) -> str:
    """A partial index's condition, as the database reports it (empty for a whole one)."""
    options = index.get("dialect_options", {})
    found = options.get("sqlite_where", options.get("postgresql_where"))
    return "" if found is None else " ".join(str(found).split())


def _schema(url: str) -> dict[str, object]:
    """Tables with their columns, keys, indexes and constraints, as the database reports them."""
    engine = create_engine(url)
    found = inspect(engine)
    schema: dict[str, object] = {}
    for table in sorted(found.get_table_names()):
        schema[table] = (
            sorted((c["name"], str(c["type"]), c["nullable"], c.get("default"))
                   for c in found.get_columns(table)),  # a column added later comes last
            found.get_pk_constraint(table)["constrained_columns"],
            sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]), _where(i))
                   for i in found.get_indexes(table)),
            sorted((tuple(u["column_names"]),) for u in found.get_unique_constraints(table)),
            sorted((tuple(f["constrained_columns"]), f["referred_table"],
                    tuple(f["referred_columns"]), f.get("options", {}).get("ondelete"))
                   for f in found.get_foreign_keys(table)),
        )  # fmt: skip
    with engine.connect() as connection:
        schema["revision"] = connection.execute(
            text("SELECT version_num FROM alembic_version")
        ).scalar()
    engine.dispose()
    return schema


def test_a_new_store_gets_the_schema_the_migrations_make(
    store_url: str, more_urls: Callable[[str], str]
) -> None:
    """A new database is given the newest schema at once (no alembic): the same tables,
    columns, keys, indexes and revision as running every migration from an empty database."""
    migrated = more_urls("migrated")
    _migrate(migrated, command.upgrade, "head")
    created = store_url
    Store(created).close()
    assert _schema(created) == _schema(migrated)
    assert _schema(created)["revision"] == HEAD_REVISION


def test_head_revision_is_the_newest_migration() -> None:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == HEAD_REVISION


def test_a_new_or_current_store_opens_without_alembic(store_url: str) -> None:
    code = (
        "import sys\nfrom ragmeter.store.db import Store\n"
        f"Store({store_url!r}).close()\n"
        f"Store({store_url!r}).close()\n"
        "print('alembic' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False"


def _run_over(
    connection: Any, rows: list[dict[str, Any]], name: str | None, spec: dict[str, Any]
) -> None:
    """Dataset 1 (``name``) holding ``rows`` and the finished run 'r' over it, as a store of
    revision 0008 holds them."""
    connection.execute(
        text("INSERT INTO datasets (id, name, source, row_count) VALUES (1, :n, 's', :c)"),
        {"n": name, "c": len(rows)},
    )
    for position, row in enumerate(rows):
        connection.execute(
            text("INSERT INTO dataset_rows (dataset_id, position, data) VALUES (1, :p, :d)"),
            {"p": position, "d": json.dumps(row)},
        )
    connection.execute(
        text(
            "INSERT INTO runs (id, state, scene_key, dataset_id, spec, request, total_rows, "
            "done_rows, resumable, usage, created_at) VALUES ('r', 'done', 'dataset', 1, "
            ":spec, '{}', :c, :c, false, '{}', '2026-01-01 00:00:00')"
        ),
        {"spec": json.dumps(spec), "c": len(rows)},
    )
    _follow_ids(connection, "datasets")


def test_datasets_stored_before_versions_keep_their_rows_and_become_version_1(
    store_url: str,
) -> None:
    """0009 rebuilds the datasets table (its name unique per version): the rows and runs that
    point at it stay, and rows kept again are recognised by their hash, computed then."""
    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    rows = [{"query": "a", "retrieved_ids": ["1"]}, {"query": "b", "retrieved_ids": ["2"]}]
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0008")
        _run_over(connection, rows, "qa", {})
    engine.dispose()
    store = Store(url)
    runs = RunStore(store)
    record = runs.dataset("qa")
    assert (record.id, record.version, record.content_hash) == (1, 1, None)
    assert list(runs.iter_dataset_rows("qa@1")) == rows  # no cascade took them
    assert runs.get("r").dataset_id == 1 and run_info(runs, runs.get("r")).lineage == {}
    kept, new = runs.keep_dataset(rows, name="qa")
    assert (kept.id, new) == (1, False)  # its hash computed now, the same rows recognised
    changed, new = runs.keep_dataset([*rows, {"query": "c"}], name="qa")
    assert (changed.version, new) == (2, True) and runs.dataset("qa").id == changed.id
    with store.engine.connect() as connection:
        assert _broken_foreign_keys(connection) == []
        if _sqlite(url):
            assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    store.close()


def test_results_stored_with_a_copy_of_their_row_read_it_from_the_dataset_after_0010(
    store_url: str,
) -> None:
    """A store of revision 0008 keeps each result's row as a copy; upgrading to 0010 drops
    the copies that are the run's dataset row (same text) and keeps those a target filled,
    and every result reads back the same row as before."""
    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    rows = [{"query": "q0", "id": "a"}, {"query": "q1", "id": 7}]
    filled = {"query": "q1", "id": 7, "retrieved_contexts": ["found by the space"]}
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0008")
        _run_over(connection, rows, None, {"metric_names": ["mrr"]})
        for index, raw in ((0, rows[0]), (1, filled)):
            connection.execute(
                text(
                    "INSERT INTO results (run_id, row_index, metric_name, score, prediction_cost, "
                    "query, raw_dataset) VALUES ('r', :i, 'mrr', 1.0, 0, :q, :raw)"
                ),
                {"i": index, "q": raw["query"], "raw": json.dumps(raw)},
            )
    engine.dispose()
    store = Store(url)
    with store.engine.connect() as connection:
        kept = connection.execute(text("SELECT row_index, raw_dataset FROM results")).all()
    indexes = {index["name"] for index in inspect(store.engine).get_indexes("results")}
    assert sorted((i, raw is None) for i, raw in kept) == [(0, True), (1, False)]
    assert "ix_results_run_metric_row" in indexes and "ix_results_run_id" not in indexes
    found, total = RunStore(store).results("r")
    assert total == 2 and [r.raw_dataset for r in found] == [rows[0], filled]
    assert [r.query for r in found] == ["q0", "q1"]
    store.close()
    with engine.begin() as connection:  # and back: every result holds its row again
        config.attributes["connection"] = connection
        command.downgrade(config, "0009")
        copies = connection.execute(
            text("SELECT CAST(raw_dataset AS TEXT) FROM results ORDER BY row_index")
        )
        assert [json.loads(raw) for (raw,) in copies] == [rows[0], filled]
    engine.dispose()


_OPEN_AT_ONCE = """
import sys, time
from ragmeter.store.db import Store
start = float(sys.argv[2])
while time.time() < start:  # every process opens the store in the same instant
    time.sleep(0.001)
Store(sys.argv[1]).close()
"""


def _open_together(url: str, processes: int) -> None:
    """``processes`` processes open the store at ``url`` in the same instant; each must open
    it without an error."""
    import time

    start = str(time.time() + 2.0)  # the interpreters start well within two seconds
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_AT_ONCE, url, start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    errors = [child.communicate(timeout=120)[1] for child in children]
    assert [child.returncode for child in children] == [0] * processes, errors


def test_processes_opening_a_new_store_at_once_create_it_once(store_url: str) -> None:
    """Two commands started together on a fresh home (a CI job's parallel steps): one creates
    the tables, the others wait for it and find them, none fails on 'table already exists'."""
    url = store_url
    _open_together(url, 6)
    engine = create_engine(url)
    with engine.connect() as connection:
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    engine.dispose()
    assert versions == [(HEAD_REVISION,)]


def test_processes_opening_an_older_store_at_once_migrate_it_once(store_url: str) -> None:
    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0008")
        _run_over(connection, [{"query": "q", "retrieved_ids": ["a"]}], "qa", {"metrics": []})
    engine.dispose()
    _open_together(url, 4)
    engine = create_engine(url)
    with engine.connect() as connection:
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
        (version,) = connection.execute(text("SELECT version FROM datasets")).one()
    engine.dispose()
    assert versions == [(HEAD_REVISION,)] and version == 1


def _per_row_hash(rows: list[dict[str, Any]]) -> str:
    """A dataset's content hash before 0029: SHA-256 of each row's BLAKE2b digest."""
    import hashlib

    import orjson

    digest = hashlib.sha256()
    for row in rows:
        try:
            text = orjson.dumps(row, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            text = json.dumps(row, sort_keys=True, default=str).encode()
        digest.update(hashlib.blake2b(text, digest_size=16).digest())
    return digest.hexdigest()


def test_0029_hashes_stored_datasets_again_and_their_runs_show_it(store_url: str) -> None:
    """0029 changes how a dataset's hash is made: each stored version gets the new one (so
    the same rows kept again are found), and a run's lineage shows it, so two runs of one
    version never differ by hash; going back restores the old hashes."""
    from ragmeter.datasets.digest import content_hash
    from ragmeter.store.db import json_text

    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    rows = [{"query": f"q{i}", "retrieved_ids": [str(i)], "m": {"b": 1, "a": 2}} for i in range(2500)]  # fmt: skip
    rows[7] = {"query": "a NUL \x00, stored as U+FFFD", "n": 2**70 + 1}
    rows[8] = {"query": "lone \ud800 surrogate"}  # stored, though the store's reader refuses it
    old = _per_row_hash(rows)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0028")
        _run_over(connection, rows, "qa", {})
        for position in (7, 8):  # as the store writes them
            connection.execute(
                text("UPDATE dataset_rows SET data = :d WHERE position = :p"),
                {"d": json_text(rows[position]), "p": position},
            )
        connection.execute(text("UPDATE datasets SET content_hash = :h"), {"h": old})
        lineage = {"dataset": {"name": "qa", "version": 1, "hash": old[:12], "rows": 2500}}
        connection.execute(text("UPDATE runs SET lineage = :l"), {"l": json.dumps(lineage)})
    engine.dispose()
    store = Store(url)  # migrated to the head on opening
    runs = RunStore(store)
    new = content_hash(rows)
    assert new != old and runs.dataset("qa").content_hash == new
    assert run_info(runs, runs.get("r")).lineage["dataset"] == {
        **lineage["dataset"],
        "hash": new[:12],
    }
    kept, made = runs.keep_dataset(rows, name="qa")
    assert (kept.id, made) == (1, False)  # the same rows, found by the new hash
    store.close()
    with engine.begin() as connection:  # back: the old hash, but of the rows as stored
        config.attributes["connection"] = connection
        command.downgrade(config, "0028")
        stored = [{**r} for r in rows]
        stored[7]["query"] = "a NUL \ufffd, stored as U+FFFD"
        back = connection.execute(text("SELECT content_hash FROM datasets")).scalar()
        assert back == _per_row_hash(stored) != old
    engine.dispose()


def _xxh3_key(value: str | int) -> int:
    """A pairing key from 0030 on: XXH3-64 of a text's UTF-8 bytes, signed; an integer id's
    of its decimal text with seed 1."""
    import xxhash

    seed = 0 if isinstance(value, str) else 1
    found = xxhash.xxh3_64_intdigest(str(value).encode("utf-8", "surrogatepass"), seed)
    return found - (1 << 64) if found >= 1 << 63 else found


def _blake2b_key(value: str | int, *, is_id: bool = False) -> int:
    """A pairing key before 0030: an 8-byte BLAKE2b digest of a text (of an id's JSON
    text), big-endian, signed."""
    import hashlib

    text_ = json.dumps(value) if is_id else str(value)
    digest = hashlib.blake2b(text_.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _stored_keys(url: str) -> tuple[dict[int, tuple[Any, Any]], dict[int, tuple[Any, ...]]]:
    """Every key the store holds: each result's (id key, query key) by result id, and each
    batch's (rows, id keys, query keys, rows without an id) by batch id."""
    import numpy as np

    engine = create_engine(url)
    with engine.connect() as connection:
        results = connection.execute(text("SELECT id, id_key, query_key FROM results")).all()
        batches = connection.execute(
            text("SELECT id, rows, id_keys, query_keys, without_id FROM result_batches")
        ).all()
    engine.dispose()
    return {i: (k, q) for i, k, q in results}, {
        i: (
            np.frombuffer(rows, "<i4").tolist(),
            np.frombuffer(ids, "<i8").tolist(),
            np.frombuffer(queries, "<i8").tolist(),
            without,
        )
        for i, rows, ids, queries, without in batches
    }


def test_0030_computes_every_pairing_key_again(store_home: Path, store_url: str) -> None:
    """0030 changes the hash that pairs two runs' rows: going back gives every key of both
    tables BLAKE2b's, of the row each result is about (its own copy, else its run's dataset
    row); coming forward again gives the keys the store writes now, so a run stored before
    pairs with a run stored after."""
    import ragmeter
    from ragmeter.reports.record import ResultRecord
    from ragmeter.runs.planning.config import EvaluationConfig
    from ragmeter.runs.storage.result_batches import batch_values, insert_batches
    from ragmeter.store.pairing import keys_of

    ids: list[Any] = [f"r{i}" if i % 3 else i for i in range(60)]
    ids[5] = None  # a row without an id: its key is 0 in a batch, NULL in results
    rows = [
        {
            **({} if found is None else {"id": found}),
            "query": f"Which part {i} says \u7248\u672c?",
            "retrieved_ids": ["a", "b"],
            "reference_ids": [] if i % 7 == 0 else ["b"],  # no reference: a null, a result row
        }
        for i, found in enumerate(ids)
    ]
    ragmeter.evaluate(rows, "mrr,hit_rate", store=True)
    runs = RunStore(Store(url := store_url))
    (first,), _ = runs.runs()
    filled = {"query": "filled by the target", "id": "own-copy"}
    second = runs.create(EvaluationConfig(metrics=("mrr",)), ["mrr"], first.dataset_id, 1, {})
    own = ResultRecord(
        row_index=0, metric_name="mrr", score=0.5, passing=None, feedback=None, error=None,
        prediction=None, contexts=None, prediction_cost=0, query=filled["query"],
        raw_dataset=filled,
    )  # fmt: skip
    runs.commit_rows(second.id, [own], {})
    sparse = [1, 30, 59]  # a resumed run's batch: rows far apart, read by position
    id_keys, query_keys = keys_of([rows[i]["query"] for i in sparse], [ids[i] for i in sparse])
    with runs.store.session() as session:
        insert_batches(
            session, [batch_values(second.id, "mrr", sparse, [1.0] * 3, id_keys, query_keys)]
        )
        session.commit()
    runs.store.close()
    now_results, now_batches = _stored_keys(url)
    assert now_batches and len(now_results) > 10

    def expected(make: Callable[..., int], **id_: bool) -> tuple[dict[int, Any], dict[int, Any]]:
        """The keys ``make`` gives each stored result and batch (``id_``: to an id)."""
        engine = create_engine(url)
        with engine.connect() as connection:
            found = connection.execute(text("SELECT id, run_id, row_index FROM results")).all()
        engine.dispose()
        results = {}
        for result_id, run_id, index in found:
            row = filled if run_id == second.id else rows[index]
            key = None if row.get("id") is None else make(row["id"], **id_)
            results[result_id] = (key, make(row["query"]))
        batches = {}
        for batch_id, (at, _, _, _) in now_batches.items():
            id_keys = [0 if ids[i] is None else make(ids[i], **id_) for i in at]
            queries = [make(rows[i]["query"]) for i in at]
            batches[batch_id] = (at, id_keys, queries, id_keys.count(0))
        return results, batches

    assert (now_results, now_batches) == expected(_xxh3_key)
    _migrate(url, command.downgrade, "0029")
    assert _stored_keys(url) == expected(_blake2b_key, is_id=True)
    Store(url).close()  # migrated to the head on opening
    assert _stored_keys(url) == (now_results, now_batches)
