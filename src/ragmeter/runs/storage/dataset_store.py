"""The stored datasets of a store and their rows: written in batches in one transaction, read
back by ranges of the primary key. A named dataset has versions: keeping rows under a name
reuses the version holding the same rows (by their content hash) or adds the next version;
``NAME`` means its newest version, ``NAME@2`` version 2."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Sequence, Sized
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from itertools import islice
from typing import Any

import orjson
from sqlalchemy import delete, func, select, update
from sqlalchemy import text as sql
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from ragmeter.datasets.digest import ContentHash, content_hash
from ragmeter.errors import ConflictError, NotFoundError, StoreError, clip
from ragmeter.store.db import Store, insert_plain, json_array_text, json_text
from ragmeter.store.lookup import is_id, known_names, split_version
from ragmeter.store.models import DatasetRecord, DatasetRowRecord, RunRecord
from ragmeter.store.names import key_text

__all__ = ["DatasetStore", "next_batch_rows"]

#: dataset rows written per INSERT: the first batch, then as many as make about
#: ``_BATCH_TEXT`` characters of JSON (the last batch's rows' mean), at most ``_MOST_ROWS``.
#: Each INSERT lets Python's lock go and takes it back, which waits while rows are scored
#: meanwhile: batches of short rows are large.
_ROW_BATCH = 2000
_BATCH_TEXT = 4 << 20
_MOST_ROWS = 10_000
#: stored rows read per SELECT (hashing a version again)
_READ_BATCH = 10_000
_ROW_COLUMNS = ("dataset_id", "position", "data")
#: the most characters of JSON text sent in one INSERT (a batch of larger rows is halved)
_BATCH_CHARS = 32 << 20
#: per database, an INSERT of the rows of a JSON array (each element's text as it is)
_SPLIT_ARRAY = {
    "sqlite": sql(
        "INSERT INTO dataset_rows (dataset_id, position, data) "
        "SELECT :dataset, :start + key, value FROM json_each(:rows)"
    ),
    "postgresql": sql(
        "INSERT INTO dataset_rows (dataset_id, position, data) "
        "SELECT :dataset, :start + e.n - 1, e.value::text "
        "FROM json_array_elements(CAST(:rows AS json)) WITH ORDINALITY AS e(value, n)"
    ),
}


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
    session: Session,
    dataset_id: int,
    rows: Iterable[dict[str, Any]],
    digest: ContentHash | None = None,
    start: int = 0,
) -> int:
    """Write ``rows`` at positions ``start``, ``start + 1``, ... a batch at a time (first
    ``_ROW_BATCH`` rows, then as many as the last batch's text allows; as many again when
    it had none), feeding ``digest``; how many.
    The next batch is made (its dicts, hash and JSON text) in a thread while the database
    stores this one."""
    dialect = session.connection().dialect.name
    count = 0
    with closing(_made_ahead(rows, digest, split=dialect in _SPLIT_ARRAY)) as batches:
        for batch, text in batches:  # an error storing one stops the worker after its batch
            _insert_batch(session, dataset_id, start + count, batch, text)
            count += len(batch)
    return count


def next_batch_rows(rows: int, characters: int) -> int:
    """Rows of the next batch after one of ``rows`` rows whose JSON text was ``characters``
    long: as many as make about ``_BATCH_TEXT`` characters, at least 1, at most
    ``_MOST_ROWS``."""
    return max(1, min(_MOST_ROWS, _BATCH_TEXT * rows // max(1, characters)))


def _made_ahead(
    rows: Iterable[dict[str, Any]], digest: ContentHash | None, *, split: bool
) -> Generator[tuple[list[dict[str, Any]], str | None], None, None]:
    """``rows`` a batch at a time with their JSON array text (when ``split``), ``digest``
    fed in order; each batch made in a worker thread while the caller stores the one before.
    Storing mostly runs in the database's own code (SQLite's, PostgreSQL's socket), which
    lets the thread run Python meanwhile. Past one batch, the rows are read by the worker
    thread alone, a batch after the other; an error making a batch is raised here."""
    iterator = iter(rows)
    size = _ROW_BATCH

    def make() -> tuple[list[dict[str, Any]], str | None]:
        nonlocal size
        batch = list(islice(iterator, size))
        if digest is not None:
            digest.add_rows(batch)
        text = json_array_text(batch) if split and batch else None
        if text is not None:
            size = next_batch_rows(len(batch), len(text))
        return batch, text

    if isinstance(rows, Sized) and len(rows) <= _ROW_BATCH:  # one batch: nothing to overlap
        while (made := make())[0]:  # (to the end, whatever its length said)
            yield made
        return
    with ThreadPoolExecutor(1, thread_name_prefix="ragmeter-dataset-rows") as worker:
        ahead = worker.submit(make)
        while True:
            batch, text = ahead.result()
            if not batch:
                return
            ahead = worker.submit(make)
            yield batch, text


def _insert_batch(
    session: Session, dataset_id: int, start: int, rows: list[dict[str, Any]], text: str | None
) -> None:
    """One INSERT of ``rows`` as one JSON array, ``text`` (``json_array_text``'s), that the
    database splits into rows (SQLite's ``json_each``, PostgreSQL's ``json_array_elements``):
    a statement per batch, not per row. Without a text (another database, or a row orjson
    refuses) the rows go one by one (``json_text``); a batch past ``_BATCH_CHARS`` goes in
    halves."""
    if text is None:
        values = [(dataset_id, start + i, json_text(row)) for i, row in enumerate(rows)]
        insert_plain(session, DatasetRowRecord, _ROW_COLUMNS, values)
    elif len(text) > _BATCH_CHARS and len(rows) > 1:
        half = len(rows) // 2
        for part, at in ((rows[:half], start), (rows[half:], start + half)):
            _insert_batch(session, dataset_id, at, part, json_array_text(part))
    else:
        split = _SPLIT_ARRAY[session.connection().dialect.name]
        session.connection().execute(split, {"dataset": dataset_id, "start": start, "rows": text})


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
        between = _rows_between(dataset_id, start, start + batch)
        with store.session() as session:  # a Core read: no ORM object per row
            texts = list(session.connection().execute(between).scalars())
        yield from map(orjson.loads, texts)
        if len(texts) < batch:
            return
        start += batch


def _newest_first() -> tuple[Any, ...]:
    return (DatasetRecord.version.desc(), DatasetRecord.id.desc())


class DatasetStore:
    """Datasets of one store (a part of ``RunStore``, which sets ``store``)."""

    store: Store

    def add_dataset(
        self, rows: Iterable[dict[str, Any]], *, name: str | None = None, source: str = ""
    ) -> DatasetRecord:
        """Keep rows (canonical dicts, read once: a generator will do) as a new dataset, one
        stored row per row, written in batches in one transaction; a named dataset's name
        must be free (``keep_dataset`` adds a version instead)."""
        if name is not None:
            with self.store.session() as session:
                if session.scalar(select(DatasetRecord.id).where(DatasetRecord.name == name)):
                    raise ConflictError(f"dataset '{name}' already exists; choose another name")
        return self._insert(rows, name=name, version=1, source=source)

    def _insert(
        self,
        rows: Iterable[dict[str, Any]],
        *,
        name: str | None,
        version: int,
        source: str,
        known_hash: str | None = None,
        file_key: str | None = None,
    ) -> DatasetRecord:
        """A new dataset of ``rows``; their content hash is computed as they are written
        unless the caller knows it already (``known_hash``)."""
        record = DatasetRecord(
            name=name, version=version, source=source, row_count=0, file_key=file_key
        )
        key = name or "(unnamed)"
        digest = None if known_hash is not None else ContentHash()
        try:
            with self.store.session() as session:
                session.add(record)
                session.flush()  # the id, and the name's version taken or not, before any row
                record.row_count = _insert_rows(session, record.id, rows, digest)
                record.content_hash = known_hash if digest is None else digest.hexdigest()
                session.commit()
        except IntegrityError:
            raise ConflictError(
                f"dataset '{key}' version {version} was stored meanwhile; try again"
            ) from None
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store dataset '{key}': {exc}") from exc
        return record

    def keep_dataset(
        self,
        rows: Iterable[dict[str, Any]],
        *,
        name: str | None,
        source: str = "",
        file_key: str | None = None,
    ) -> tuple[DatasetRecord, bool]:
        """The stored version of dataset ``name`` holding exactly ``rows`` (iterated twice: a
        list, or rows made afresh on each pass) (any version with
        the same content hash), or a new version after its newest; and whether it is new.
        Unnamed rows (a request's inline rows) reuse an unnamed dataset with the same rows.
        Rows that say how many they are (``len``) are read once when no version has as many
        (none can hold them): hashed as they are stored. Rows read from a file give its
        ``file_key`` (``FileOrigin.key``): a version kept from the same file is found by it,
        no row hashed."""
        named = DatasetRecord.name.is_(None) if name is None else DatasetRecord.name == name
        same = select(DatasetRecord).where(named)
        if file_key is not None:
            from_file = same.where(DatasetRecord.file_key == file_key)
            if isinstance(rows, Sized):
                from_file = from_file.where(DatasetRecord.row_count == len(rows))
            with self.store.session() as session:
                found = session.scalars(from_file.order_by(*_newest_first())).first()
            if found is not None:
                return found, False
        if isinstance(rows, Sized):
            with self.store.session() as session:
                clash = session.scalar(
                    select(DatasetRecord.id)
                    .where(named, DatasetRecord.row_count == len(rows))
                    .limit(1)
                )
                newest = (
                    None
                    if name is None
                    else session.scalars(same.order_by(*_newest_first())).first()
                )
            if clash is None:
                version = 1 if newest is None else newest.version + 1
                record = self._insert(
                    rows, name=name, version=version, source=source, file_key=file_key
                )
                return record, True
        wanted = content_hash(rows)
        with self.store.session() as session:
            found = session.scalars(same.where(DatasetRecord.content_hash == wanted)).first()
            newest = (
                None if name is None else session.scalars(same.order_by(*_newest_first())).first()
            )
        if found is None and name is not None:
            found = self._rehash_versions(name, wanted)
        if found is not None:
            if file_key is not None and found.file_key is None:
                self._know_file(found, file_key)
            return found, False
        version = 1 if newest is None else newest.version + 1
        record = self._insert(
            rows, name=name, version=version, source=source, known_hash=wanted, file_key=file_key
        )
        return record, True

    def _know_file(self, record: DatasetRecord, file_key: str) -> None:
        """Remember that ``record``'s rows are those of the file with ``file_key`` (found by
        their hash: stored before file keys, or from another file with the same rows)."""
        with self.store.session() as session:
            session.execute(
                update(DatasetRecord)
                .where(DatasetRecord.id == record.id, DatasetRecord.file_key.is_(None))
                .values(file_key=file_key)
            )
            session.commit()
        record.file_key = file_key

    def _rehash_versions(self, name: str, wanted: str) -> DatasetRecord | None:
        """Versions of ``name`` whose hash was never computed (stored before versions, or a
        test set that grew) get it now; the one whose rows hash to ``wanted``, if any."""
        with self.store.session() as session:
            unknown = session.scalars(
                select(DatasetRecord).where(
                    DatasetRecord.name == name, DatasetRecord.content_hash.is_(None)
                )
            ).all()
        found = None
        for record in unknown:
            digest = content_hash(_each_row(self.store, record.id, _READ_BATCH))
            with self.store.session() as session:
                session.execute(
                    update(DatasetRecord)
                    .where(DatasetRecord.id == record.id)
                    .values(content_hash=digest)
                )
                session.commit()
            if digest == wanted:
                record.content_hash = digest
                found = record
        return found

    def append_dataset_rows(self, dataset_id: int, rows: Sequence[dict[str, Any]]) -> int:
        """Add ``rows`` after a dataset's last row, in one transaction (a generator keeping
        rows as they pass); the dataset's new row count. Its content hash is computed again
        when next needed; it is no longer any file's rows."""
        try:
            with self.store.session() as session:
                record = session.get(DatasetRecord, dataset_id)
                if record is None:
                    raise NotFoundError(f"no dataset {dataset_id}")
                start = record.row_count
                record.row_count += _insert_rows(session, dataset_id, rows, start=start)
                record.content_hash = None
                record.file_key = None  # its rows are no longer a file's
                session.commit()
                return record.row_count
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot add rows to dataset {dataset_id}: {exc}") from exc

    def dataset(self, key: str | int) -> DatasetRecord:
        """A dataset by id, name (its newest version) or ``NAME@VERSION`` (its rows stay in
        the store: ``dataset_rows``, ``iter_dataset_rows``)."""
        text = key_text(key)
        with self.store.session() as session:
            if is_id(text):
                found = session.get(DatasetRecord, int(text))
            else:
                name, version = split_version(text, "dataset")
                query = select(DatasetRecord).where(DatasetRecord.name == name)
                if version is not None:
                    query = query.where(DatasetRecord.version == version)
                found = session.scalars(query.order_by(*_newest_first())).first()
            if found is None:
                known = known_names(session, DatasetRecord.name, "upload one first")
                raise NotFoundError(f"no dataset '{clip(text)}'; known: {known}")
            return found

    def dataset_rows(
        self, key: str | int, offset: int, limit: int, max_bytes: int | None = None
    ) -> list[dict[str, Any]]:
        """Rows ``offset`` to ``offset + limit`` of a dataset, stopping once they pass
        ``max_bytes`` of JSON: one range of the primary key, no other row is read."""
        record = self.dataset(key)
        query = _rows_between(record.id, offset, offset + limit)
        with self.store.session() as session:
            texts = session.scalars(query.execution_options(yield_per=8))
            try:
                return _until(texts, max_bytes, orjson.loads)
            finally:  # a page stopped by max_bytes leaves PostgreSQL's server cursor open
                texts.close()

    def iter_dataset_rows(self, key: str | int, batch: int = 2000) -> Iterator[dict[str, Any]]:
        """Every row of a dataset in order, read ``batch`` rows at a time (each batch one
        short query, so no read stays open while the caller works on the rows). An unknown
        dataset fails here, not at the first row."""
        return _each_row(self.store, self.dataset(key).id, batch)

    def datasets(self, offset: int = 0, limit: int = 50) -> tuple[list[DatasetRecord], int]:
        """Named datasets (each as its newest version), newest first, and how many there
        are; their rows are not read."""
        newest = (
            select(func.max(DatasetRecord.id))
            .where(DatasetRecord.name.is_not(None))
            .group_by(DatasetRecord.name)
        )
        with self.store.session() as session:
            total = session.scalar(select(func.count()).select_from(newest.subquery())) or 0
            query = (
                select(DatasetRecord)
                .where(DatasetRecord.id.in_(newest))
                .order_by(DatasetRecord.id.desc())
                .offset(offset)
                .limit(limit)
            )
            return list(session.scalars(query).all()), total

    def dataset_versions(self, name: str) -> list[DatasetRecord]:
        """Every version of dataset ``name``, newest first."""
        self.dataset(name)
        with self.store.session() as session:
            query = select(DatasetRecord).where(DatasetRecord.name == name)
            return list(session.scalars(query.order_by(*_newest_first())).all())

    def runs_per_dataset(self, dataset_ids: Sequence[int]) -> dict[int, int]:
        """How many runs use each of ``dataset_ids`` (an id no run uses is left out)."""
        if not dataset_ids:
            return {}
        with self.store.session() as session:
            found = session.execute(
                select(RunRecord.dataset_id, func.count())
                .where(RunRecord.dataset_id.in_(list(dataset_ids)))
                .group_by(RunRecord.dataset_id)
            ).all()
        return {int(k): int(n) for k, n in found}

    def delete_dataset(self, key: str | int) -> DatasetRecord:
        """Forget a named dataset, every version (or one, as ``NAME@V``): its name is freed at
        once; the rows of a version go too unless a run still uses them (then they stay,
        unnamed, for that run's results and resume)."""
        record = self.dataset(key)
        if record.name is None and not is_id(str(key)):
            raise NotFoundError(f"no dataset '{clip(str(key))}'")
        one = "@" in str(key) or is_id(str(key)) or record.name is None
        chosen = DatasetRecord.id == record.id if one else DatasetRecord.name == record.name
        try:
            with self.store.session() as session:
                ids = list(session.scalars(select(DatasetRecord.id).where(chosen)))
                used = set(
                    session.scalars(
                        select(RunRecord.dataset_id).where(RunRecord.dataset_id.in_(ids))
                    )
                )
                kept = [i for i in ids if i in used]
                gone = [i for i in ids if i not in used]
                if kept:
                    session.execute(
                        update(DatasetRecord).where(DatasetRecord.id.in_(kept)).values(name=None)
                    )
                if gone:
                    session.execute(delete(DatasetRecord).where(DatasetRecord.id.in_(gone)))
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot delete dataset '{record.name}': {exc}") from exc
        return record
