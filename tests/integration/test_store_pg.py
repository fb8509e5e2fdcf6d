"""What a server database shows and a file does not: many connections writing the same rows at
once, a server whose time zone is not UTC. Each test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from ragmeter.judge.cache import CachedReply, JudgeCache
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store


def test_replies_cached_by_many_threads_at_once_are_kept_once(store_url: str) -> None:
    """Two rows asking the judge the same thing finish together: both store the reply, and
    neither fails on the other's row (SQLite serialises writers; PostgreSQL's concurrent
    inserts of one key must not raise a duplicate-key error)."""
    store = Store(store_url)
    cache = JudgeCache(store)
    threads, keys = 8, [f"key-{i}" for i in range(40)]
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def put_all() -> None:
        start.wait()
        for key in keys:
            try:
                cache.put(key, "m", "http://judge", CachedReply("{}", 1, 2))
            except BaseException as exc:  # every failure is reported, none lost
                errors.append(exc)

    workers = [threading.Thread(target=put_all) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert errors == []
    assert cache.count() == len(keys)
    assert cache.get(keys[0]) == CachedReply("{}", 1, 2)
    store.close()


def test_times_are_stored_in_utc_whatever_the_server_s_zone(store_url: str) -> None:
    """The session's server runs in Asia/Shanghai (UTC+8): a dataset made now is stored as
    made now in UTC, as SQLite's CURRENT_TIMESTAMP gives it, not eight hours ahead."""
    store = Store(store_url)
    made = RunStore(store).add_dataset([{"query": "q"}], name="now")
    now = datetime.now(UTC).replace(tzinfo=None)
    assert abs(made.created_at - now) < timedelta(minutes=5), (made.created_at, now)
    store.close()
