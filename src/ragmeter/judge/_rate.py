"""A model's request rate (``requests_per_minute``) shared through the store by every process
using it (a team's server replicas, commands), so that together they never pass it: each
request first takes a place among the last minute's requests, in one short transaction
under the store's write lock; without one it waits until the oldest leaves the minute.
A place counts from when its request could arrive to 60 s after it ended (``StoreRate``).

The limit is written here rather than taken from a rate-limit library because the count
must live in the team's database (SQLite or PostgreSQL), which no such library keeps: they
count in one process's memory, or in Redis."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.store.db import Store
from ragmeter.store.locks import write_lock
from ragmeter.store.models import ModelRequestRecord

__all__ = ["StoreRate", "rate_for"]

_log = logging.getLogger(__name__)

#: the window a requests-per-minute limit counts in
WINDOW_S = 60.0


#: while every place in the minute is out, look again this often for one whose request ended
LOOK_AGAIN_S = 0.5


class StoreRate:
    """At most ``per_minute`` requests to ``key`` in any 60 seconds, across processes.

    A place is stamped with a time no earlier than its request reached the model: while the
    request is out, the latest it can arrive (``hold`` after the place was taken); once it
    is over, the time it ended (``done``). A place counts until 60 s after its stamp, so
    when a request takes a place, each of the ``per_minute`` before it that arrived in the
    same 60 s still counts: the model never sees more than ``per_minute`` in any minute of
    its own, however long the time between taking a place and the request leaving (a busy
    event loop, a slow network). Taking the place as the request leaves, with a fixed
    margin, let a loaded machine pass the limit by about 1%."""

    def __init__(self, store: Store, key: str, per_minute: int) -> None:
        if per_minute < 1:
            raise ValueError(f"per_minute must be at least 1, got {per_minute}")
        self.store = store
        self.key = key
        self.per_minute = per_minute

    async def acquire(self, hold: float) -> int:
        """Wait until this request may go; its place (for ``done``), stamped ``hold`` seconds
        ahead: the request reaches the model within that or never."""
        while True:
            wait, place = await asyncio.to_thread(self.try_take, None, hold)
            if place is not None:
                return place
            await asyncio.sleep(wait)

    def try_take(self, now: float | None = None, hold: float = 0.0) -> tuple[float, int | None]:
        """Take a place now, stamped ``now + hold``: ``(0.0, its id)``; or the seconds until
        one may free and None (nothing taken). A place still out frees only once its
        request is done, so the wait for one is a short look again."""
        now = time.time() if now is None else now
        table = ModelRequestRecord
        with self.store.engine.connect() as connection, connection.begin():
            write_lock(connection, f"ragmeter-rate {self.key}")
            since = now - WINDOW_S
            connection.execute(delete(table).where(table.model_key == self.key, table.at <= since))
            count, oldest = connection.execute(
                select(func.count(), func.min(table.at)).where(table.model_key == self.key)
            ).one()
            if count >= self.per_minute:
                wait = float(oldest) - since
                return (min(wait, LOOK_AGAIN_S) if oldest > now else max(wait, 0.01)), None
            place = connection.execute(
                insert(table).values(model_key=self.key, at=now + hold)
            ).inserted_primary_key
        return 0.0, int(place[0]) if place is not None else None

    def done(self, place: int, now: float | None = None) -> None:
        """The request of ``place`` is over: its place counts until 60 s from now."""
        now = time.time() if now is None else now
        table = ModelRequestRecord
        try:
            with self.store.engine.connect() as connection, connection.begin():
                connection.execute(
                    update(table).where(table.id == place, table.at > now).values(at=now)
                )
        except SQLAlchemyError as exc:  # the place keeps its later stamp: it frees late
            _log.warning("cannot mark request %s to %s done: %s", place, self.key, exc)


_rates: dict[tuple[str, str, int], StoreRate] = {}
_lock = threading.Lock()


def rate_for(store: Store, base_url: str, model: str, per_minute: int) -> StoreRate:
    """The process's shared rate for an endpoint and model in ``store``."""
    key = f"{base_url} {model}"
    with _lock:
        found = _rates.get((store.url, key, per_minute))
        if found is None:
            found = _rates[(store.url, key, per_minute)] = StoreRate(store, key, per_minute)
        return found
