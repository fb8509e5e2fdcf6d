"""A new stored run is made (its dataset stored, its record written) while its rows are
scored: the results are kept once it is made, a dataset the store refuses fails the
evaluation with no run left behind, and a run stopped while it is being made (once, or
twice: a second Ctrl-C) is left cancelled and resumable, not pending. Another connection
holding the store's write lock (SQLite) or the datasets table (PostgreSQL) keeps the dataset
waiting. Each test runs on the default SQLite file and on a PostgreSQL database named in
``ragmeter.toml``."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text

import ragmeter
from ragmeter.config import load_settings
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import open_store
from ragmeter.store.models import DatasetRecord

ROWS = [
    {
        "id": f"r{i}",
        "query": f"Which step of part {i} checks the version?",
        "retrieved_ids": [f"d{i}", f"d{i + 1}", f"d{i + 2}"],
        "reference_ids": [f"d{i + i % 3}"],
    }
    for i in range(3000)
]
METRICS = "mrr,hit_rate"


def _url(home: Path) -> str:
    return load_settings(home / "ragmeter.toml").store_url()


def _runs(home: Path) -> RunStore:
    return RunStore(open_store(_url(home)))


def _datasets(runs: RunStore) -> int:
    """How many datasets the store holds, named or not."""
    with runs.store.session() as session:
        return int(session.scalar(select(func.count()).select_from(DatasetRecord)) or 0)


@contextmanager
def _store_held(url: str, table: str = "datasets") -> Iterator[None]:
    """Another connection holding what storing a dataset needs (or writing to ``table``):
    SQLite's write lock, or PostgreSQL's ``table``, until the end."""
    if url.startswith("sqlite"):
        other = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the write lock: readers go on, writers wait
        try:
            yield
        finally:
            other.execute("ROLLBACK")
            other.close()
        return
    engine = create_engine(url)
    try:
        with engine.connect() as other:
            other.execute(text(f"LOCK TABLE {table} IN EXCLUSIVE MODE"))  # reads go on
            try:
                yield
            finally:
                other.rollback()
    finally:
        engine.dispose()


def _refuse_rows(url: str) -> None:
    """Make the store refuse any dataset row from now on, as a full disk would."""
    if url.startswith("sqlite"):
        other = sqlite3.connect(url.removeprefix("sqlite:///"))
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON dataset_rows "  # an error, not a conflict
            "BEGIN INSERT INTO no_room_for_rows VALUES (1); END"
        )
        other.commit()
        other.close()
        return
    engine = create_engine(url)
    with engine.begin() as other:
        other.execute(
            text(
                "CREATE FUNCTION refuse_rows() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'no_room_for_rows'; END $$"
            )
        )
        other.execute(
            text(
                "CREATE TRIGGER refuse BEFORE INSERT ON dataset_rows "
                "FOR EACH STATEMENT EXECUTE FUNCTION refuse_rows()"
            )
        )
    engine.dispose()


class _Scored:
    """``on_progress``: set once every row x metric result is scored."""

    def __init__(self, wanted: int) -> None:
        self.count = 0
        self.wanted = wanted
        self.all = threading.Event()

    def __call__(self, more: int) -> None:
        self.count += more
        if self.count >= self.wanted:
            self.all.set()


def test_rows_are_scored_while_the_dataset_waits_and_kept_once_it_is_stored(
    store_home: Path,
) -> None:
    ragmeter.evaluate(ROWS[:1], "mrr", store=True)  # the store exists
    runs = _runs(store_home)
    scored = _Scored(len(ROWS) * 2)
    with ThreadPoolExecutor(1) as pool:
        with _store_held(_url(store_home)):
            running = pool.submit(ragmeter.evaluate, ROWS, METRICS, store=True, on_progress=scored)
            assert scored.all.wait(60), f"{scored.count} results scored"
            scored_at = datetime.now(UTC).replace(tzinfo=None)
            assert not running.done()  # every row scored, and the dataset still waiting
            assert runs.runs()[1] == 1 and _datasets(runs) == 1
        report = running.result(timeout=120)
    record = runs.get(report.run_id or "")
    assert record.state == "done" and record.done_rows == len(ROWS) == record.total_rows
    assert record.started_at is not None and record.finished_at is not None
    assert record.started_at < scored_at < record.finished_at  # its time counts the scoring
    unstored = ragmeter.evaluate(ROWS, METRICS)
    assert report.scores("mrr") == unstored.scores("mrr")
    stored = runs.report(record.id)
    assert stored.scores("mrr") == unstored.scores("mrr")
    assert stored.scores("hit_rate") == unstored.scores("hit_rate")
    dataset = runs.dataset(record.dataset_id)
    assert dataset.row_count == len(ROWS)
    assert list(runs.iter_dataset_rows(dataset.id)) == ROWS


def test_a_dataset_the_store_refuses_fails_the_evaluation_and_leaves_no_run(
    store_home: Path,
) -> None:
    ragmeter.evaluate(ROWS[:1], "mrr", store=True)
    _refuse_rows(_url(store_home))
    with pytest.raises(ragmeter.RagmeterError, match="cannot store dataset") as failed:
        ragmeter.evaluate(ROWS, METRICS, store="refused")
    assert "no_room_for_rows" in str(failed.value)
    runs = _runs(store_home)
    assert runs.runs()[1] == 1 and _datasets(runs) == 1
    with pytest.raises(ragmeter.NotFoundError):
        runs.get("refused")
    assert not [t for t in threading.enumerate() if t.name.startswith("ragmeter-dataset-rows")]


@pytest.mark.parametrize("stops", [1, 2])
def test_a_run_stopped_while_it_is_made_is_cancelled_and_resumable(
    store_home: Path, stops: int
) -> None:
    """One stop waits for the run being made, then leaves it cancelled; a second (a second
    Ctrl-C) ends that wait, and the thread making it leaves it cancelled itself once the
    dataset is stored (asyncio.run waits for that thread as it closes)."""
    ragmeter.evaluate(ROWS[:1], "mrr", store=True)
    scored = _Scored(len(ROWS) * 2)
    name = f"stopped-{stops}"

    async def stop_it_while_made() -> None:
        evaluation = asyncio.ensure_future(
            ragmeter.aevaluate(ROWS, METRICS, store=name, on_progress=scored)
        )
        with _store_held(_url(store_home)):
            while not scored.all.is_set():
                assert not evaluation.done(), evaluation
                await asyncio.sleep(0.05)
            evaluation.cancel()
            await asyncio.sleep(0.2)  # the cancel waits for the run being made
            assert not evaluation.done()
            if stops == 2:
                evaluation.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await evaluation  # the second stop does not wait
                with pytest.raises(ragmeter.NotFoundError):
                    _runs(store_home).get(name)  # still being made
        with pytest.raises(asyncio.CancelledError):
            await evaluation

    asyncio.run(asyncio.wait_for(stop_it_while_made(), 120))
    runs = _runs(store_home)
    record = runs.get(name)
    assert record.state == "cancelled" and record.resumable and record.done_rows == 0
    resumed: Any = ragmeter.evaluate(ROWS, METRICS, store=name)
    assert resumed.run_id == name
    assert runs.get(name).state == "done" and runs.get(name).done_rows == len(ROWS)


@pytest.mark.parametrize("stops", [1, 2])
def test_a_run_stopped_while_it_is_started_is_left_cancelled(store_home: Path, stops: int) -> None:
    """A stop while a pending run is being started (its state written in a thread, held up
    here by another connection) does not wait for the start, nor does a second stop: the
    starting thread finds the stop and leaves the run cancelled and resumable (asyncio.run
    waits for that thread as it closes), never running with no one running it."""
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.runs.execution.executor import execute_run
    from ragmeter.runs.planning.config import EvaluationConfig

    ragmeter.evaluate(ROWS[:1], "mrr", store=True)  # the store exists
    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    dataset = runs.add_dataset(ROWS[:20])
    run_id = runs.create(EvaluationConfig(metrics=("mrr",)), ["mrr"], dataset.id, 20, {}).id

    async def stop_it_while_started() -> None:
        with _store_held(_url(store_home), "runs"):
            evaluation = asyncio.ensure_future(execute_run(runs, kb, run_id))
            await asyncio.sleep(0.5)  # the start waits for the other connection
            assert not evaluation.done()
            for _ in range(stops):
                evaluation.cancel()
                await asyncio.sleep(0)
            with pytest.raises(asyncio.CancelledError):
                await evaluation  # at once: the start is still held up
        # the other connection gone, the thread starts the run, then leaves it cancelled

    asyncio.run(asyncio.wait_for(stop_it_while_started(), 120))
    record = runs.get(run_id)
    assert (record.state, record.resumable, record.done_rows) == ("cancelled", True, 0)
    runs.reopen(run_id)
    asyncio.run(execute_run(runs, kb, run_id))
    assert runs.get(run_id).state == "done" and runs.get(run_id).done_rows == 20


def test_many_new_runs_at_once_are_all_made_and_done(store_home: Path) -> None:
    """Eight new stored runs in one event loop with two worker threads: no thread waits for
    a run to be made (each is made while its rows are scored), and every one ends done."""
    ragmeter.evaluate(ROWS[:1], "mrr", store=True)
    parts = [ROWS[i * 300 : (i + 1) * 300] for i in range(8)]

    async def all_at_once() -> list[Any]:  # on two threads, fewer than the runs
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(2))
        return await asyncio.gather(*(ragmeter.aevaluate(p, METRICS, store=True) for p in parts))

    reports = asyncio.run(asyncio.wait_for(all_at_once(), 300))
    runs = _runs(store_home)
    for part, report in zip(parts, reports, strict=True):
        record = runs.get(report.run_id)
        assert record.state == "done" and record.done_rows == len(part)
        assert runs.report(record.id).scores("mrr") == report.scores("mrr")
