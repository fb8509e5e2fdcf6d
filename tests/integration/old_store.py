"""A store as ragmeter wrote it before the judge's reasoning was kept (revision 0006, no
``results.details``), holding one finished run, for the tests that open it with today's code:
the home's SQLite file, or the PostgreSQL database ``$RAGMETER_STORE_URL`` names."""

from __future__ import annotations

import json
import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text

from ragmeter.config import STORE_URL_ENV
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


def write_old_store(home: Path) -> str:
    """The store a server started now in ``home`` uses (``$RAGMETER_STORE_URL``'s database,
    emptied first, or ``home/ragmeter.db``) at revision 0006 with the finished run ``OLD_RUN``
    (one row); its URL."""
    home.mkdir(parents=True, exist_ok=True)
    url = os.environ.get(STORE_URL_ENV) or f"sqlite:///{home / 'ragmeter.db'}"
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    raw = json.dumps(OLD_ROW)
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":  # the test's own database, made at the newest
            connection.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
        config.attributes["connection"] = connection
        command.upgrade(config, "0006")
        dataset = connection.execute(  # its id from the table's own sequence, as any later
            text(  # dataset's is on PostgreSQL
                "INSERT INTO datasets (name, source, row_count) VALUES ('old', 'x', 1) RETURNING id"
            )
        ).scalar_one()
        connection.execute(
            text("INSERT INTO dataset_rows (dataset_id, position, data) VALUES (:id, 0, :row)"),
            {"id": dataset, "row": raw},
        )
        spec = json.dumps({"metric_names": [name for name, _s, _u in OLD_RESULTS]})
        connection.execute(
            text(
                "INSERT INTO runs (id, state, scene_key, dataset_id, spec, request, total_rows, "
                "done_rows, resumable, usage) VALUES (:id, 'done', 'dataset', :dataset, :spec, "
                "'{}', 1, 1, :no, '{}')"
            ),
            {"id": OLD_RUN, "dataset": dataset, "spec": spec, "no": False},
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
        columns = {column["name"] for column in inspect(connection).get_columns("results")}
        assert "details" not in columns  # a store from before the column
    engine.dispose()
    return url
