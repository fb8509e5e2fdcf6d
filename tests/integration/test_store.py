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
            connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0003"
        )
    assert store.files_dir == tmp_path / "old-files"
    store.close()
