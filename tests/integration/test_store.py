"""The store file: migrations bring an older database forward without losing its rows."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text

from ragmeter.store.db import _MIGRATIONS, Store


def test_a_judge_cache_database_gains_the_knowledge_tables(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
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
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert (
            connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0004"
        )
    assert store.files_dir == tmp_path / "old-files"
    store.close()


def test_results_stored_before_error_kinds_keep_a_null_kind(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
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
                "1, 0, '{}')"
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
