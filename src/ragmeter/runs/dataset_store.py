"""The stored datasets of a store and their rows: written in batches in one transaction, read
back by ranges of the primary key."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import orjson
from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from ragmeter.errors import ConflictError, NotFoundError, StoreError, clip
from ragmeter.store import DatasetRecord, DatasetRowRecord, RunRecord, Store
from ragmeter.store.db import insert_plain, json_text
from ragmeter.store.lookup import by_name_or_id, is_id

__all__ = ["DatasetStore"]

#: dataset rows written per INSERT (executemany)
_ROW_BATCH = 2000
_ROW_COLUMNS = ("dataset_id", "position", "data")


def _until(texts: Iterable[str], max_bytes: int | None, read: Callable[[str], Any]) -> list[Any]:
    """``read`` of each text, stopping after the one that takes the total past ``max_bytes``."""
    out: list[Any] = []
    size = 0
    for text in texts:
        out.append(read(text))
        size += len(text)
        if max_bytes is not None and size > max_bytes:
            break
    return out


def _insert_rows(
    session: Session, dataset_id: int, rows: Iterable[dict[str, Any]], start: int = 0
) -> int:
    """Write ``rows`` at positions ``start``, ``start + 1``, ... with one executemany per
    ``_ROW_BATCH`` rows (JSON text by orjson, tuples straight to the driver); how many."""
    count = 0
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append((dataset_id, start + count, json_text(row)))
        count += 1
        if len(batch) == _ROW_BATCH:
            insert_plain(session, DatasetRowRecord, _ROW_COLUMNS, batch)
            batch = []
    insert_plain(session, DatasetRowRecord, _ROW_COLUMNS, batch)
    return count


def _rows_between(dataset_id: int, start: int, stop: int) -> Any:
    """SQL: the JSON texts of a dataset's rows ``start`` to ``stop`` (excluded), in order."""
    return (
        select(DatasetRowRecord.data)
        .where(
            DatasetRowRecord.dataset_id == dataset_id,
            DatasetRowRecord.position >= start,
            DatasetRowRecord.position < stop,
        )
        .order_by(DatasetRowRecord.position)
    )


def _each_row(store: Store, dataset_id: int, batch: int) -> Iterator[dict[str, Any]]:
    start = 0
    while True:
        with store.session() as session:
            texts = list(session.scalars(_rows_between(dataset_id, start, start + batch)))
        yield from map(orjson.loads, texts)
        if len(texts) < batch:
            return
        start += batch


class DatasetStore:
    """Datasets of one store (a part of ``RunStore``, which sets ``store``)."""

    store: Store

    def add_dataset(
        self, rows: Iterable[dict[str, Any]], *, name: str | None = None, source: str = ""
    ) -> DatasetRecord:
        """Keep rows (canonical dicts, read once: a generator will do), one per row, written
        in batches in one transaction; a named dataset's name must be free."""
        record = DatasetRecord(name=name, source=source, row_count=0)
        key = name or "(unnamed)"
        try:
            with self.store.session() as session:
                session.add(record)
                session.flush()  # the id, and the name taken or not, before any row
                record.row_count = _insert_rows(session, record.id, rows)
                session.commit()
        except IntegrityError:
            raise ConflictError(f"dataset '{key}' already exists; choose another name") from None
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store dataset '{key}': {exc}") from exc
        return record

    def append_dataset_rows(self, dataset_id: int, rows: Sequence[dict[str, Any]]) -> int:
        """Add ``rows`` after a dataset's last row, in one transaction (a generator keeping
        rows as they pass); the dataset's new row count."""
        try:
            with self.store.session() as session:
                record = session.get(DatasetRecord, dataset_id)
                if record is None:
                    raise NotFoundError(f"no dataset {dataset_id}")
                record.row_count += _insert_rows(session, dataset_id, rows, record.row_count)
                session.commit()
                return record.row_count
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot add rows to dataset {dataset_id}: {exc}") from exc

    def dataset(self, key: str | int) -> DatasetRecord:
        """A dataset by name or id (its rows stay in the store: ``dataset_rows``,
        ``iter_dataset_rows``)."""
        with self.store.session() as session:
            record = by_name_or_id(
                session, DatasetRecord, key, what="dataset", hint="upload one first"
            )
            if record.name is None and not is_id(str(key)):
                raise NotFoundError(f"no dataset '{clip(str(key))}'")
            return record

    def dataset_rows(
        self, key: str | int, offset: int, limit: int, max_bytes: int | None = None
    ) -> list[dict[str, Any]]:
        """Rows ``offset`` to ``offset + limit`` of a dataset, stopping once they pass
        ``max_bytes`` of JSON: one range of the primary key, no other row is read."""
        record = self.dataset(key)
        query = _rows_between(record.id, offset, offset + limit)
        with self.store.session() as session:
            texts = session.scalars(query.execution_options(yield_per=8))
            return _until(texts, max_bytes, orjson.loads)

    def iter_dataset_rows(self, key: str | int, batch: int = 2000) -> Iterator[dict[str, Any]]:
        """Every row of a dataset in order, read ``batch`` rows at a time (each batch one
        short query, so no read stays open while the caller works on the rows). An unknown
        dataset fails here, not at the first row."""
        return _each_row(self.store, self.dataset(key).id, batch)

    def datasets(self, offset: int = 0, limit: int = 50) -> tuple[list[DatasetRecord], int]:
        """Named datasets, newest first, and how many there are; their rows are not read."""
        named = DatasetRecord.name.is_not(None)
        with self.store.session() as session:
            total = session.scalar(select(func.count()).where(named)) or 0
            query = (
                select(DatasetRecord)
                .where(named)
                .order_by(DatasetRecord.id.desc())
                .offset(offset)
                .limit(limit)
            )
            return list(session.scalars(query).all()), total

    def delete_dataset(self, key: str | int) -> DatasetRecord:
        """Forget a named dataset: its name is freed at once; its rows go too unless a run
        still uses them (then they stay, unnamed, for that run's results and resume)."""
        record = self.dataset(key)
        try:
            with self.store.session() as session:
                used = session.scalar(select(func.count()).where(RunRecord.dataset_id == record.id))
                this = DatasetRecord.id == record.id
                if used:
                    session.execute(update(DatasetRecord).where(this).values(name=None))
                else:
                    session.execute(delete(DatasetRecord).where(this))
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot delete dataset '{record.name}': {exc}") from exc
        return record
