"""The command line on the configured store, a SQLite file and a PostgreSQL database alike:
``ragmeter eval`` stores a run, the same file again reuses its dataset version, and the runs
are listed and compared from the store."""

from __future__ import annotations

import json
from pathlib import Path

from ragmeter.config import STORE_URL_ENV
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store
from tests.integration.helpers import run
from tests.pg import PostgresServer

ROWS = [
    {"query": f"q{i}", "retrieved_ids": ["a", "b", "c"], "reference_ids": [["a", "b", "z"][i % 3]]}
    for i in range(9)
]


def test_eval_stores_runs_that_list_and_compare(
    store_url: str, store_home: Path, tmp_path: Path
) -> None:
    home = store_home
    data = tmp_path / "qa.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    for name in ("base", "again"):
        done = run("eval", str(data), "-m", "mrr,hit_rate", "--name", name, home=home)
        assert done.returncode == 0, done.stderr
    listed = run("runs", "list", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert [r["name"] for r in runs] == ["again", "base"]  # newest first
    compared = run("runs", "compare", "base", "again", "--json", home=home)
    assert compared.returncode == 0, compared.stderr
    store = Store(store_url)
    found, total = RunStore(store).runs()
    assert total == 2 and {r.state for r in found} == {"done"}
    assert {r.dataset_id for r in found} == {found[0].dataset_id}  # one dataset version
    assert {r.done_rows for r in found} == {len(ROWS)}
    store.close()


def test_ragmeter_store_url_names_the_store_before_the_config_file(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    configured = tmp_path / "configured.db"
    (home / "ragmeter.toml").write_text(f'[store]\nurl = "sqlite:///{configured}"\n')
    data = tmp_path / "qa.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    url = postgres.database()
    env = {STORE_URL_ENV: url}
    done = run("eval", str(data), "-m", "mrr", "--name", "by-env", home=home, env=env)
    assert done.returncode == 0, done.stderr
    listed = run("runs", "list", "--json", home=home, env=env)
    assert [r["name"] for r in json.loads(listed.stdout)] == ["by-env"]
    store = Store(url)
    assert [r.name for r in RunStore(store).runs()[0]] == ["by-env"]
    store.close()
    assert not configured.exists() and not (home / "ragmeter.db").exists()
    unset = run("runs", "list", "--json", home=home)  # without it, the configured store
    assert unset.returncode == 0 and json.loads(unset.stdout) == []
    assert configured.exists()
    postgres.drop(url)
