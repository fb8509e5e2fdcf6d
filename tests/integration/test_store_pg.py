"""What a server database shows and a file does not: many connections writing the same rows at
once, a server whose time zone is not UTC (each on SQLite and on PostgreSQL); a server that
cannot be reached or a driver not installed, named without the URL's password."""

from __future__ import annotations

import sys
import threading
from datetime import UTC, datetime, timedelta

import pytest

from ragmeter.errors import StoreError
from ragmeter.judge.cache import CachedReply, JudgeCache
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store
from tests.integration.service import free_port
from tests.pg import PostgresServer


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


def test_a_store_that_cannot_be_reached_is_named_without_its_password() -> None:
    pytest.importorskip("psycopg", reason="the 'postgres' extra (psycopg) is not installed")
    url = f"postgresql+psycopg://ragmeter:s3cret-pw@127.0.0.1:{free_port()}/nowhere"
    with pytest.raises(StoreError) as raised:
        Store(url)
    message = str(raised.value)
    assert "s3cret-pw" not in message
    assert "postgresql+psycopg://ragmeter:***@127.0.0.1" in message and "refused" in message


def test_a_postgresql_store_without_its_driver_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as when the extra is not installed
    with pytest.raises(StoreError) as raised:
        Store("postgresql+psycopg://ragmeter:s3cret-pw@127.0.0.1/ragmeter")
    message = str(raised.value)
    assert "driver psycopg is not installed (pip install 'ragmeter[postgres]')" in message
    assert "s3cret-pw" not in message


def test_connections_the_server_closed_are_replaced_not_failed(
    postgres: PostgresServer,
) -> None:
    """A database restarted or failed over closes every connection a service holds in its
    pool: the next request gets a new one instead of an error."""
    import psycopg

    url = postgres.database()
    store = Store(url)
    runs = RunStore(store)
    runs.add_dataset([{"query": "q"}], name="before")
    with psycopg.connect(postgres.dsn(url), autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert ended is not None and ended[0] >= 1  # the store's pooled connection
    assert [d.name for d in runs.datasets()[0]] == ["before"]
    store.close()
