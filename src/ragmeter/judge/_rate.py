"""A model's request rate (``requests_per_minute``) shared through the store by every process
using it (a team's server replicas, commands), so that together they never pass it: each
request first takes a place among the last minute's requests, in one short transaction
under the store's write lock; without one it waits until the oldest leaves the minute. A
place frees a minute and a margin after it was taken; a request sent later than a quarter of
the margin after its place was taken (a busy machine, a new connection) stamps its place
again with when it was sent, so the place frees a minute and the margin after that. Sent is
when the request's body was written to its connection (a busy event loop may write it well
after the request was made); the rest of the margin covers its way from there to the model:
the model never sees more than the limit in its own minute. The stamp is written once the
reply is in: a late request whose reply takes over a minute may find its place taken again
meanwhile.

The limit is written here rather than taken from a rate-limit library because the count
must live in the team's database (SQLite or PostgreSQL), which no such library keeps: they
count in one process's memory, or in Redis."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import StoreError
from ragmeter.store.db import Store
from ragmeter.store.locks import write_lock
from ragmeter.store.models import ModelRequestRecord

__all__ = ["Place", "StoreRate", "rate_for"]

#: the window a requests-per-minute limit counts in
WINDOW_S = 60.0
#: a place frees this much after the window, for the time between taking it and the request
#: reaching the model (so the model never sees more than the limit in its own minute)
MARGIN_S = 1.0
#: a request sent this long after its place was taken stamps its place again (``late``); the
#: rest of the margin is for the way from its connection to the model
LATE_S = MARGIN_S / 4


@dataclass(frozen=True)
class Place:
    """A place taken among a minute's requests: its row and when it was taken."""

    id: int
    at: float


class StoreRate:
    """At most ``per_minute`` requests to ``key`` in any 60 seconds, across processes."""

    def __init__(self, store: Store, key: str, per_minute: int) -> None:
        if per_minute < 1:
            raise ValueError(f"per_minute must be at least 1, got {per_minute}")
        self.store = store
        self.key = key
        self.per_minute = per_minute

    async def acquire(self) -> Place:
        """Wait until this request may go (its place is then taken)."""
        while True:
            wait, place = await asyncio.to_thread(self.take)
            if place is not None:
                return place
            await asyncio.sleep(wait)

    def try_take(self, now: float | None = None) -> float:
        """Take a place now (0.0), or the seconds until one frees (nothing taken)."""
        return self.take(now)[0]

    def take(self, now: float | None = None) -> tuple[float, Place | None]:
        """(0.0, the place taken now), or (the seconds until one frees, None)."""
        table = ModelRequestRecord
        with self.store.engine.connect() as connection, connection.begin():
            write_lock(connection, f"ragmeter-rate {self.key}")
            now = time.time() if now is None else now  # once the lock is held
            since = now - WINDOW_S - MARGIN_S
            connection.execute(delete(table).where(table.model_key == self.key, table.at <= since))
            count, oldest = connection.execute(
                select(func.count(), func.min(table.at)).where(table.model_key == self.key)
            ).one()
            if count >= self.per_minute:
                return max(float(oldest) - since, 0.01), None
            added = connection.execute(insert(table).values(model_key=self.key, at=now))
            row_id: int = added.inserted_primary_key[0]  # type: ignore[index]
        return 0.0, Place(row_id, now)

    def late(self, place: Place, sent: float) -> bool:
        """Whether the request of ``place``, sent at ``sent``, left past ``LATE_S`` (its
        place must then be stamped again: ``stamp``)."""
        return sent - place.at > LATE_S

    def stamp(self, place: Place, sent: float) -> None:
        """Stamp ``place`` with the time its request was sent: it frees a minute and the
        margin after that. A place already freed is taken again until then."""
        table = ModelRequestRecord
        try:
            with self.store.engine.connect() as connection, connection.begin():
                write_lock(connection, f"ragmeter-rate {self.key}")
                stamped = connection.execute(
                    update(table)
                    .where(table.id == place.id, table.at == place.at)  # a freed id may be reused
                    .values(at=max(sent, place.at))
                ).rowcount
                if not stamped:
                    connection.execute(insert(table).values(model_key=self.key, at=sent))
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot stamp a request in the rate of {self.key}: {exc}") from exc


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
