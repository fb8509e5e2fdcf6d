"""A store file as ragmeter wrote it before the judge's reasoning was kept (revision 0006, no
``results.details``), holding one finished run, for the tests that open it with today's code."""

from __future__ import annotations

import json
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from ragmeter.store.db import _MIGRATIONS

OLD_RUN = "old-run-before-details"
OLD_ROW = {
    "query": "Where is the Eiffel Tower?",
    "response": "The Eiffel Tower is in Paris.",
    "reference": "The Eiffel Tower stands in Paris, France.",
    "retrieved_contexts": ["The Eiffel Tower is in Paris.", "Rome is in Italy."],
    "reference_contexts": ["The Eiffel Tower is in Paris."],
}
#: (metric, score, judge usage) of the old run's one row
OLD_RESULTS = [
    ("faithfulness", 1.0, {"requests": 2, "cached": 0, "tokens": 300, "latency_ms": 40}),
    ("hit_rate", 1.0, None),
]


def write_old_store(home: Path) -> Path:
    """``home/ragmeter.db`` at revision 0006 with the finished run ``OLD_RUN`` (one row)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "ragmeter.db"
    engine = create_engine(f"sqlite:///{path}")
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    raw = json.dumps(OLD_ROW)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0006")
        connection.execute(
            text("INSERT INTO datasets (id, name, source, row_count) VALUES (1, 'old', 'x', 1)")
        )
        connection.execute(
            text("INSERT INTO dataset_rows (dataset_id, position, data) VALUES (1, 0, :row)"),
            {"row": raw},
        )
        spec = json.dumps({"metric_names": [name for name, _s, _u in OLD_RESULTS]})
        connection.execute(
            text(
                "INSERT INTO runs (id, state, scene_key, dataset_id, spec, request, total_rows, "
                "done_rows, resumable, usage) VALUES (:id, 'done', 'dataset', 1, :spec, '{}', "
                "1, 1, 0, '{}')"
            ),
            {"id": OLD_RUN, "spec": spec},
        )
        for name, score, usage in OLD_RESULTS:
            connection.execute(
                text(
                    "INSERT INTO results (run_id, row_index, metric_name, score, cost, "
                    "prediction, contexts, prediction_cost, query, raw_dataset) VALUES (:run, 0, "
                    ":name, :score, :cost, :prediction, :contexts, 0, :query, :raw)"
                ),
                {
                    "run": OLD_RUN,
                    "name": name,
                    "score": score,
                    "cost": None if usage is None else json.dumps(usage),
                    "prediction": json.dumps(OLD_ROW["response"]),
                    "contexts": json.dumps(OLD_ROW["retrieved_contexts"]),
                    "query": OLD_ROW["query"],
                    "raw": raw,
                },
            )
        columns = {row[1] for row in connection.execute(text("PRAGMA table_info(results)"))}
        assert "details" not in columns  # a store from before the column
    engine.dispose()
    return path
