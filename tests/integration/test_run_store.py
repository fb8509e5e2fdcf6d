"""Executing stored runs on a real store (a SQLite file, then a PostgreSQL database): rows
already stored are never redone, every row lands once, and a run's state tells what happened."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import text

from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.reports import ResultRecord
from ragmeter.runs.execution.executor import execute_run
from ragmeter.runs.planning.plan import build_plan
from ragmeter.runs.planning.request import EvaluateServeRequest, config_from_request
from ragmeter.runs.storage.dataset_store import next_batch_rows
from ragmeter.runs.storage.store import RunStore

pytestmark = pytest.mark.usefixtures("store_home")  # each test on SQLite and on PostgreSQL

ROWS = [
    {
        "query": f"q{i}",
        "retrieved_contexts": ["a", "b", "c"],
        "reference_contexts": [["a", "b", "c", "z"][i % 4]],
    }
    for i in range(10)
]


def _new_run(runs: RunStore, kb: KnowledgeBase, parallel: int = 3) -> str:
    request = EvaluateServeRequest(
        scene_key="dataset",
        evaluate_metrics=["RetrieverMRRMetric", "hit_rate"],
        datasets=ROWS,
        parallel_num=parallel,
    )
    config = config_from_request(request)
    plan = build_plan(config, ROWS, kb)
    names = [m.metric_name for m in plan.metrics]
    dataset = runs.add_dataset(ROWS)
    return runs.create(config, names, dataset.id, len(ROWS), {}).id


def _results(runs: RunStore, run_id: str) -> list[Any]:
    found, total = runs.results(run_id, 0, 1000)
    assert total == len(found)
    return found


def test_a_fresh_run_scores_every_row_once(store_url: str) -> None:
    kb = KnowledgeBase()
    assert kb.store.url == store_url  # the configured store
    runs = RunStore(kb.store)
    run_id = _new_run(runs, kb)
    asyncio.run(execute_run(runs, kb, run_id))
    record = runs.get(run_id)
    assert (record.state, record.done_rows, record.resumable) == ("done", 10, False)
    found = _results(runs, run_id)
    assert [(r.row_index, r.metric_name) for r in found] == [
        (i, m) for i in range(10) for m in ("RetrieverMRRMetric", "hit_rate")
    ]
    mrr = [r.score for r in found if r.metric_name == "RetrieverMRRMetric"]
    assert mrr == [[1.0, 0.5, 1 / 3, 0.0][i % 4] for i in range(10)]
    summary = runs.summary(record)
    assert (
        summary["hit_rate"]["count"] == 10 and summary["hit_rate"]["mean"] == 0.8
    )  # rows 3 and 7 miss


def test_resume_skips_rows_already_stored() -> None:
    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    run_id = _new_run(runs, kb)
    kept = [
        ResultRecord(i, name, 0.25, None, "kept from before", None, None, None, 0, f"q{i}", {})
        for i in (0, 4)
        for name in ("RetrieverMRRMetric", "hit_rate")
    ]
    runs.commit_rows(run_id, kept, {"requests": 3.0})
    assert runs.get(run_id).done_rows == 2
    asyncio.run(execute_run(runs, kb, run_id))
    record = runs.get(run_id)
    assert (record.state, record.done_rows) == ("done", 10)
    assert record.usage["requests"] == 3.0  # earlier cost carried over
    found = _results(runs, run_id)
    assert len(found) == 20 and len({(r.row_index, r.metric_name) for r in found}) == 20
    for r in found:
        if r.row_index in (0, 4):
            assert (r.score, r.feedback) == (0.25, "kept from before")  # not redone
        else:
            assert r.feedback != "kept from before"


def test_interrupted_and_cancelled_runs_are_resumable() -> None:
    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    run_id = _new_run(runs, kb)
    assert runs.start(run_id)
    assert runs.mark_interrupted() == [run_id]
    record = runs.get(run_id)
    assert (record.state, record.resumable) == ("failed", True) and "interrupted" in record.error
    runs.reopen(run_id)
    assert runs.get(run_id).state == "pending"
    cancelled = runs.request_cancel(run_id)
    assert (cancelled.state, cancelled.resumable) == ("cancelled", True)
    asyncio.run(execute_run(runs, kb, run_id))  # a cancelled run is not started
    assert runs.get(run_id).state == "cancelled" and not _results(runs, run_id)


def test_only_runs_of_dead_processes_are_marked_interrupted() -> None:
    import os
    import socket
    import subprocess
    import sys

    from ragmeter.store.models import RunRecord

    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    host = socket.gethostname()
    owners = {
        "live": f"{host}:{os.getppid()}",  # the process that started the tests
        "dead": f"{host}:{gone.stdout.strip()}",
        "elsewhere": "another-machine:1",
    }
    ids = {}
    for label, owner in owners.items():
        ids[label] = _new_run(runs, kb)
        assert runs.start(ids[label])
        with kb.store.session() as session:
            session.get(RunRecord, ids[label]).owner = owner  # type: ignore[union-attr]
            session.commit()
    assert runs.mark_interrupted() == [ids["dead"]]
    assert {label: runs.get(i).state for label, i in ids.items()} == {
        "live": "running", "dead": "failed", "elsewhere": "running",
    }  # fmt: skip


def test_runs_made_within_one_second_are_listed_newest_first() -> None:
    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    made = [_new_run(runs, kb) for _ in range(5)]  # well within a second
    listed, _total = runs.runs(0, 5)
    assert [r.id for r in listed] == made[::-1]


def test_a_run_of_the_rows_as_given_stores_each_row_once_and_reads_it_back() -> None:
    """Results of rows no target filled keep no copy of their row (NULL): it is read from the
    run's dataset, so every result reads back its row as the evaluation saw it."""
    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    run_id = _new_run(runs, kb)
    asyncio.run(execute_run(runs, kb, run_id))
    with kb.store.engine.connect() as connection:
        copies = connection.execute(
            text("SELECT count(*) FROM results WHERE run_id = :r AND raw_dataset IS NOT NULL"),
            {"r": run_id},
        ).scalar()
    assert copies == 0
    found = _results(runs, run_id)
    assert [r.raw_dataset for r in found] == [row for row in ROWS for _ in range(2)]
    assert [r.query for r in found] == [row["query"] for row in ROWS for _ in range(2)]
    assert all(r.prediction == ["a", "b", "c"] for r in found)


def test_a_kept_dataset_diff_follows_the_versions_rows() -> None:
    """A diff of two dataset versions is kept for the next request, and is made afresh once
    either version's rows change (a test set grows; a version removed and another made)."""
    from ragmeter.runs.views import dataset_diff as diffs
    from ragmeter.runs.views.dataset_diff import dataset_diff

    runs = RunStore(KnowledgeBase().store)
    rows = [{"id": f"r{i}", "query": f"q{i}", "reference_ids": [str(i)]} for i in range(4)]
    a = runs.add_dataset(rows, name="cases").id
    edited = [*rows[:3], {**rows[3], "query": "q3, edited"}]
    b = runs.keep_dataset(edited, name="cases")[0].id
    first = dataset_diff(runs, a, b)
    assert (first.added, first.removed, first.changed, first.unchanged) == (0, 0, 1, 3)
    kept = dict(diffs._kept)
    assert dataset_diff(runs, a, b) == first
    assert diffs._kept == kept  # found kept: nothing made or dropped
    runs.append_dataset_rows(b, [{"id": "r9", "query": "q9", "reference_ids": ["9"]}])
    grown = dataset_diff(runs, a, b)
    assert (grown.added, grown.changed, grown.unchanged) == (1, 1, 3)
    runs.delete_dataset(b)
    again = runs.keep_dataset(rows[:2], name="cases")[0].id
    fewer = dataset_diff(runs, a, again)
    assert (fewer.added, fewer.removed, fewer.changed, fewer.unchanged) == (0, 2, 0, 2)


def test_rows_are_stored_a_batch_at_a_time_and_read_back_as_they_were() -> None:
    """A dataset is written a batch of rows per statement (the database splits one JSON
    array), in order across batches, each row's text as ``json_text`` writes it. A batch
    holding a row orjson cannot write (an integer past 64 bits) goes one row at a time,
    that integer's digits kept exactly; a NUL becomes U+FFFD as everywhere in the store,
    and the rows read back hash as the rows given did."""
    from ragmeter.datasets.digest import content_hash
    from ragmeter.store.db import json_text

    plain = [{"id": i, "query": f"q{i} 问题", "scores": [0.5, 1e-7, -3], "meta": {"b": 1, "a": [None]}}
             for i in range(4500)]  # fmt: skip
    odd = {2101: {"query": "big", "n": 2**70 + 1}, 4400: {"query": "nul \x00", "t": 'tab\t"\\'}}
    rows = [odd.get(i, row) for i, row in enumerate(plain)]
    runs = RunStore(KnowledgeBase().store)
    record, new = runs.keep_dataset(rows, name="odd")
    assert new and record.row_count == len(rows)
    with runs.store.engine.connect() as connection:
        texts = (
            connection.execute(
                text("SELECT data FROM dataset_rows WHERE dataset_id = :d ORDER BY position"),
                {"d": record.id},
            )
            .scalars()
            .all()
        )
    assert texts == [json_text(row) for row in rows]  # key order and numbers as written
    assert "1180591620717411303425" in texts[2101]
    back = list(runs.iter_dataset_rows("odd"))
    assert back[4400] == {"query": "nul \ufffd", "t": 'tab\t"\\'}
    assert back[:2101] == rows[:2101] and back[2102:4400] == rows[2102:4400]
    assert record.content_hash == content_hash(rows)
    without_big = [*back[:2101], *back[2102:]]  # read back, a float: not the integer given
    assert content_hash(without_big) == content_hash([*rows[:2101], *rows[2102:]])
    again, new = runs.keep_dataset(rows, name="odd")  # the same rows: found by their hash
    assert (again.id, new) == (record.id, False)
    grown = runs.append_dataset_rows(record.id, rows[:3])
    assert grown == len(rows) + 3 and list(runs.iter_dataset_rows("odd"))[-3:] == rows[:3]


class _BadRow(ValueError):
    pass


def test_a_row_that_fails_to_come_leaves_no_dataset_and_no_worker() -> None:
    """Rows read as they are stored (a generator), past several batches: one that fails to
    come (a bad line of a file read lazily) stops the dataset with that error; nothing of it
    is stored, its name stays free, and the thread that made the batches ahead is gone."""
    import threading

    def rows() -> Any:
        for i in range(7000):
            if i == 5003:
                raise _BadRow(f"row {i} is broken")
            yield {"query": f"q{i}", "n": i}

    runs = RunStore(KnowledgeBase().store)
    with pytest.raises(_BadRow, match="row 5003"):
        runs.add_dataset(rows(), name="lazy")
    with runs.store.engine.connect() as connection:
        stored = connection.execute(text("SELECT count(*) FROM dataset_rows")).scalar()
        named = connection.execute(text("SELECT count(*) FROM datasets WHERE name = 'lazy'"))
        assert (stored, named.scalar()) == (0, 0)
    assert not [t for t in threading.enumerate() if t.name.startswith("ragmeter-dataset-rows")]
    record = runs.add_dataset(({"query": f"q{i}", "n": i} for i in range(5000)), name="lazy")
    assert record.row_count == 5000 and list(runs.iter_dataset_rows("lazy"))[4999]["n"] == 4999


def test_rows_that_say_they_are_fewer_than_they_are_are_all_stored() -> None:
    """Rows that give a length (one batch's worth or fewer) are read to their end all the
    same: a length that undercounts loses no row."""

    class Undercounting:
        def __len__(self) -> int:
            return 1

        def __iter__(self) -> Any:
            return iter([{"query": f"q{i}"} for i in range(4100)])

    runs = RunStore(KnowledgeBase().store)
    record = runs.add_dataset(Undercounting(), name="more")
    assert record.row_count == 4100
    assert [row["query"] for row in runs.iter_dataset_rows("more")][-1] == "q4099"


def test_a_batch_past_the_statement_size_goes_in_halves() -> None:
    """A batch whose JSON text passes the most one statement sends (32 M characters) is
    stored in halves, each row as it was, in order."""
    big = "x" * (17 << 20)
    rows = [{"query": "a", "text": big}, {"query": "b", "text": big}, {"query": "c"}]
    runs = RunStore(KnowledgeBase().store)
    record = runs.add_dataset(rows, name="large")
    back = list(runs.iter_dataset_rows("large"))
    assert record.row_count == 3 and [r["query"] for r in back] == ["a", "b", "c"]
    assert back[1]["text"] == big


def test_wide_rows_go_in_batches_their_text_sizes() -> None:
    """After the first batch, a batch holds as many rows as make about 4 M characters of
    JSON (5 KB rows: about 800 a batch, not 10,000); every row is stored, in order."""
    assert next_batch_rows(2000, 2000 * 5020) == (4 << 20) // 5020
    assert next_batch_rows(2000, 2000 * 200) == 10_000  # short rows: the most
    assert next_batch_rows(1, 40 << 20) == 1 and next_batch_rows(3, 0) == 10_000
    rows = ({"query": f"q{i}", "text": chr(97 + i % 26) * 5000} for i in range(6000))
    runs = RunStore(KnowledgeBase().store)
    record = runs.add_dataset(rows, name="wide")
    back = list(runs.iter_dataset_rows("wide"))
    assert record.row_count == 6000 and [r["query"] for r in back] == [f"q{i}" for i in range(6000)]
    assert all(r["text"] == chr(97 + i % 26) * 5000 for i, r in enumerate(back))


def test_a_run_made_before_its_stop_and_stopped_twice_is_left_cancelled() -> None:
    """The other order of a stop while a run is made: the making thread has made the run and
    found no stop yet, then the evaluation is stopped twice before the loop starts the run.
    The first stop leaves it cancelled on a thread, which the second does not end."""
    from ragmeter.runs.execution.executor import MakingStop

    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    request = EvaluateServeRequest(
        scene_key="dataset", evaluate_metrics=["hit_rate"], datasets=ROWS
    )
    config = config_from_request(request)
    plan = build_plan(config, ROWS, kb)
    stop = MakingStop()
    checked = asyncio.Event()
    holding = asyncio.Event()  # never set: the making thread is slow to hand its run over

    def create() -> str:
        dataset = runs.add_dataset(ROWS)
        return runs.create(config, ["hit_rate"], dataset.id, len(ROWS), {}, "made").id

    async def make() -> str:
        run_id = await asyncio.to_thread(create)
        assert not stop.made()  # not stopped yet: the thread leaves the run to the loop
        checked.set()
        await holding.wait()
        return run_id

    async def stopped_twice() -> None:
        evaluation = asyncio.ensure_future(
            execute_run(runs, kb, "made", plan=plan, make=make(), stop=stop)
        )
        await checked.wait()
        evaluation.cancel()
        await asyncio.sleep(0)  # the first stop hands the run to a thread
        evaluation.cancel()
        with pytest.raises(asyncio.CancelledError):
            await evaluation

    asyncio.run(stopped_twice())  # closing, the loop waits for that thread
    record = runs.get("made")
    assert (record.state, record.resumable, record.done_rows) == ("cancelled", True, 0)
