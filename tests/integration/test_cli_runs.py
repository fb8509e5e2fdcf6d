"""``ragmeter eval`` is a stored run through the same executor as the service: rows are
committed as they finish, Ctrl-C keeps them, ``ragmeter runs resume`` finishes only the rest,
``--no-store`` keeps nothing; ``evaluate(store=...)`` does the same from Python. Each test runs
on the default SQLite file and on a PostgreSQL database named in ``ragmeter.toml``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import ragmeter
from ragmeter.config import load_settings
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import open_store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import RAGMETER, run

ROWS = [
    {
        "query": f"What does step {i} of the guide do?",
        "response": f"Step {i} installs the package and checks the version.",
        "contexts": [f"Step {i} installs the package.", "Then it checks the version."],
        "retrieved_ids": ["a", "b"],
        "reference_ids": ["b"],
    }
    for i in range(12)
]


def _rows(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    return path


def _runs(home: Path) -> RunStore:
    return RunStore(open_store(load_settings(home / "ragmeter.toml").store_url()))


def test_eval_is_a_stored_run_and_no_store_keeps_nothing(tmp_path: Path, store_home: Path) -> None:
    data, home = _rows(tmp_path / "qa.jsonl"), store_home
    done = run("eval", str(data), "-m", "mrr,hit_rate", home=home)
    assert done.returncode == 0, done.stderr
    found, total = _runs(home).runs()
    assert total == 1 and found[0].state == "done" and found[0].done_rows == len(ROWS)
    assert f"run {found[0].id} stored" in done.stdout
    listed = run("runs", "list", home=home)
    assert found[0].id in listed.stdout
    assert run("eval", str(data), "-m", "mrr", "--no-store", home=home).returncode == 0
    assert _runs(home).runs()[1] == 1  # still the one run


def test_ctrl_c_keeps_finished_rows_and_resume_does_only_the_rest(
    tmp_path: Path, store_home: Path
) -> None:
    data, home = _rows(tmp_path / "qa.jsonl"), store_home
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAGMETER_HOME": str(home), "NO_COLOR": "1"}
    with ScriptedJudgeServer(latency_ms=1500) as judge:  # slow: the run is stopped midway
        args = ["eval", str(data), "-m", "faithfulness", "--judge-model", "scripted",
                "--judge-base-url", judge.url, "--max-concurrency", "1"]  # fmt: skip
        process = subprocess.Popen(
            [*RAGMETER, *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # a shell's background job ignores SIGINT, and its children inherit that: give the
            # command a terminal's default, as a user pressing Ctrl-C has
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        # two judge requests per row and four rows in flight: after 8 answers some row is done
        # (watching the judge, not the store, which the command is writing meanwhile)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if judge.snapshot().get("chat_requests", 0) >= 9:
                break
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=120)
        assert process.returncode == 130, err
        runs = _runs(home)
        record = runs.runs()[0][0]
        assert record.state == "cancelled" and record.resumable
        kept = record.done_rows
        assert 1 <= kept < len(ROWS)
        assert f"ragmeter runs resume {record.id}" in err
        asked = judge.stats["chat_requests"]
        judge.latency_s = 0.05  # the rest may go fast
        resumed = run("runs", "resume", record.id, home=home)
        assert resumed.returncode == 0, resumed.stderr
        after = runs.get(record.id)
        assert after.state == "done" and after.done_rows == len(ROWS)
        # the rows kept were not asked again: one fused request per remaining row at most
        assert judge.stats["chat_requests"] - asked <= (len(ROWS) - kept) * 2
        assert len(runs.results(record.id)[0]) == len(ROWS)


def test_evaluate_stores_only_when_asked_and_resumes_by_name(store_home: Path) -> None:
    home = store_home
    report = ragmeter.evaluate(ROWS, "mrr,hit_rate")
    assert report.run_id is None and not (home / "ragmeter.db").exists()
    stored = ragmeter.evaluate(ROWS, "mrr,hit_rate", store="nightly")
    assert stored.run_id == "nightly" and stored.scores("mrr") == report.scores("mrr")
    runs = _runs(home)
    assert runs.get("nightly").state == "done"
    config = runs.get("nightly").spec
    assert config["metrics"] == ["mrr", "hit_rate"] and config["target"] == {"kind": "none"}
    with pytest.raises(ragmeter.RagmeterError, match="exists with other rows or settings"):
        ragmeter.evaluate(ROWS[:3], "mrr,hit_rate", store="nightly")
    with pytest.raises(ragmeter.RagmeterError, match="is done; choose another name"):
        ragmeter.evaluate(ROWS, "mrr,hit_rate", store="nightly")
    # a stopped run of that name is resumed: only its missing rows are evaluated
    runs.store.engine.dispose()
    record = runs.get("nightly")
    with runs.store.session() as session:
        from sqlalchemy import delete, update

        from ragmeter.runs.storage.result_batches import remove_plain
        from ragmeter.store.models import ResultRow, RunRecord

        session.execute(delete(ResultRow).where(ResultRow.row_index >= 5))
        remove_plain(session, record.id, range(5, len(ROWS)))  # and those kept in batches
        session.execute(
            update(RunRecord)
            .where(RunRecord.id == record.id)
            .values(state="cancelled", done_rows=5, resumable=True)
        )
        session.commit()
    resumed = ragmeter.evaluate(ROWS, "mrr,hit_rate", store="nightly")
    assert resumed.run_id == "nightly" and resumed.scores("mrr") == report.scores("mrr")
    assert runs.get("nightly").state == "done" and runs.get("nightly").done_rows == len(ROWS)


def test_stored_runs_compare_by_row_id_when_every_row_has_one(store_home: Path) -> None:
    from ragmeter.runs.views.pairs import compare_runs

    base = [
        {"id": i if i % 2 else f"r{i}", "query": f"q{i}", "retrieved_ids": ["a", "b"]}
        | {"reference_ids": ["b"]}
        for i in range(6)
    ]
    # the candidate holds the same rows in another order, and its queries were reworded:
    # only the ids say which row is which
    candidate = [
        row | {"query": f"reworded {row['query']}", "retrieved_ids": ["b", "a"]}
        for row in reversed(base)
    ]
    ragmeter.evaluate(base, "mrr", store="base")
    ragmeter.evaluate(candidate, "mrr", store="candidate")
    runs = _runs(store_home)
    (mrr,) = compare_runs(runs.store, ("base", ["mrr"]), ("candidate", ["mrr"]))
    assert mrr.paired_by == "id" and mrr.paired == 6 and mrr.better == 6
    assert mrr.delta == pytest.approx(0.5) and mrr.base_unpaired == mrr.other_unpaired == 0
