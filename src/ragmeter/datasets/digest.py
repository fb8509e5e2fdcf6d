"""What tells two datasets' rows apart: a digest of each row's content (key order aside) and
a hash of a whole dataset's rows in order, so the same rows are stored once and two versions
of a dataset say which rows were added, removed or changed; and the key of the file rows
were read from, which finds them again without hashing each row."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from ragmeter._version import ragmeter_version

__all__ = [
    "HASH_BATCH",
    "READER_VERSION",
    "ContentHash",
    "FileOrigin",
    "canonical_texts",
    "content_hash",
    "row_digest",
]

#: raised whenever reading a file may give other rows than before (a field renamed, a value
#: read another way), so that a file never finds rows an older reader made of it
READER_VERSION = 1
_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def row_digest(row: Any) -> bytes:
    """16 bytes that change with any value of ``row`` (a dict of JSON values), not with the
    order of its keys."""
    try:
        text = orjson.dumps(row, option=_CANONICAL)
    except TypeError:  # nested past orjson's depth (a row stored before depth limits)
        text = json.dumps(row, sort_keys=True, default=str).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


#: rows whose canonical texts one ``orjson`` call makes (a list): the hash does not depend on it
HASH_BATCH = 2000


def _numbers(value: Any) -> Any:
    """orjson's fallback: numpy values as the store writes them (imported when first met:
    the store's module loads SQLAlchemy, which commands that hash nothing never need)."""
    from ragmeter.store.db import numbers_as_json

    return numbers_as_json(value)


def _without_nul(value: Any) -> Any:
    """``value`` with each NUL character (in a key or a text) as U+FFFD, as the store keeps
    text (``store.db``)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list | tuple):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def _canonical_one(row: Any) -> bytes:
    try:
        return orjson.dumps(row, default=_numbers, option=_CANONICAL)
    except (orjson.JSONEncodeError, TypeError):  # a lone surrogate, a huge integer, deep
        text = json.dumps(
            row, sort_keys=True, default=str, separators=(",", ":"), ensure_ascii=False
        )
        return text.encode("utf-8", "surrogatepass")


def _joined(rows: Sequence[Any]) -> bytes:
    try:
        return orjson.dumps(list(rows), default=_numbers, option=_CANONICAL)[1:-1]
    except (orjson.JSONEncodeError, TypeError):  # some row it refuses: each on its own
        return b",".join(map(_canonical_one, rows))


def canonical_texts(rows: Sequence[Any]) -> bytes:
    """The canonical JSON text of each of ``rows`` (keys sorted, no spaces), joined by
    commas: the inside of their JSON array, made by one ``orjson`` call when it can. A NUL
    character counts as the U+FFFD the store keeps (keys sorted after), so rows read back
    from the store give the text of the rows that were stored."""
    text = _joined(rows)
    if b"\\u0000" in text:  # rare: a NUL somewhere (or a backslash and "u0000" written)
        text = _joined([_without_nul(row) for row in rows])
    return text


class ContentHash:
    """The hash of rows in order: SHA-256 of their canonical JSON texts joined by commas
    (what is inside their JSON array, so no two lists of rows share it), fed a batch of rows
    at a time as they are written; the batches do not change it."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.rows = 0

    def add_rows(self, rows: Sequence[Any]) -> None:
        if not rows:
            return
        if self.rows:
            self._hash.update(b",")
        self._hash.update(canonical_texts(rows))
        self.rows += len(rows)

    def hexdigest(self) -> str:
        """64 hex digits; two datasets with equal rows in equal order have equal ones."""
        return self._hash.hexdigest()


def content_hash(rows: Iterable[Any]) -> str:
    """``ContentHash`` of ``rows``."""
    digest = ContentHash()
    iterator = iter(rows)
    while batch := list(islice(iterator, HASH_BATCH)):
        digest.add_rows(batch)
    return digest.hexdigest()


#: files read through other libraries, whose versions may read the same bytes otherwise
_READ_WITH = {".parquet": ("pandas", "pyarrow"), ".pq": ("pandas", "pyarrow")}


def _versions(path: Path) -> str:
    """What read the file: ragmeter's and its reader's versions, and for a format read by
    other libraries (Parquet: pandas, pyarrow), theirs."""
    from importlib.metadata import PackageNotFoundError, version

    text = f"ragmeter {ragmeter_version()} reader {READER_VERSION}"
    for package in _READ_WITH.get(path.suffix.lower(), ()):
        try:
            text += f" {package} {version(package)}"
        except PackageNotFoundError:
            text += f" {package} absent"
    return text + "\n"


@dataclass(frozen=True)
class FileOrigin:
    """The file a dataset's rows were read from, as it was when they were read."""

    path: Path
    size: int
    mtime_ns: int
    #: the key being computed in a thread since the file was first seen (``of``)
    _ahead: Future[str | None] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, path: Path, *, key_ahead: bool = False) -> FileOrigin:
        """The file at ``path`` as it is now. ``key_ahead``: its key is computed meanwhile,
        in a thread (hashing lets Python's lock go: the rows are read at the same time), for
        rows that will be stored."""
        found = path.stat()
        origin = cls(path, found.st_size, found.st_mtime_ns)
        if key_ahead:
            ahead: Future[str | None] = Future()
            thread = threading.Thread(
                target=origin._key_into, args=(ahead,), name="ragmeter-file-key", daemon=True
            )
            with contextlib.suppress(RuntimeError):  # no thread to be had: hashed when asked
                thread.start()
                object.__setattr__(origin, "_ahead", ahead)
        return origin

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (or copied) as the file it names: a key computed ahead stays behind, and
        is computed again when asked."""
        return (FileOrigin, (self.path, self.size, self.mtime_ns))

    def _unchanged(self) -> bool:
        """Whether the file is still there with the same size and modification time."""
        try:
            return FileOrigin.of(self.path) == self
        except OSError:
            return False

    def key(self) -> str | None:
        """SHA-256 of what read the file (ragmeter's and the reader's versions; for Parquet,
        pandas' and pyarrow's too) and the file's bytes: the same key means the same rows.
        None when the file changed (or went) since its rows were read, as its bytes may no
        longer be theirs. A key computed ahead is waited for, and holds only while the file
        is still as it was."""
        if self._ahead is not None:
            found = self._ahead.result()
            return found if self._unchanged() else None
        return self._key()

    def _key_into(self, ahead: Future[str | None]) -> None:
        try:
            ahead.set_result(self._key())
        except BaseException as exc:  # (reported by key(), in the thread that asks)
            ahead.set_exception(exc)

    def _key(self) -> str | None:
        if not self._unchanged():
            return None
        digest = hashlib.sha256(_versions(self.path).encode())
        try:
            with self.path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        except OSError:
            return None
        return digest.hexdigest() if self._unchanged() else None
