"""What pairs a result with the same row of another run, stored with the result so a
comparison joins two runs on an index: a 63-bit hash of the row's ``id`` (when it has one)
and of its query text. Rows pair by ``id`` when every row of both runs has one, else by
query text (``runs.views.compare``); this module says what counts as an id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

__all__ = ["is_row_id", "key_hash", "keys_of", "row_keys"]


def is_row_id(value: Any) -> bool:
    """Whether ``value`` can pair rows: a string or an integer (not a boolean)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def key_hash(text: str) -> int:
    """A signed 64-bit hash of ``text`` (BLAKE2b): two distinct keys of a 100,000-row run
    share one with a probability near 3e-10."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def row_keys(query: str, row: Any) -> tuple[int | None, int]:
    """(id key, query key) of a result: the id's hash (of its JSON text, so "1" and 1
    differ) or None when the row has no id, and the query's hash."""
    found = row.get("id") if isinstance(row, dict) else None
    id_key = key_hash(json.dumps(found)) if is_row_id(found) else None
    return id_key, key_hash(query)


def _hashes(texts: Iterable[str]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """``key_hash`` of each of ``texts``, as one array (the digests read at once)."""
    blake = hashlib.blake2b
    digests = [blake(t.encode("utf-8", "surrogatepass"), digest_size=8).digest() for t in texts]
    return np.frombuffer(b"".join(digests), dtype=">i8").astype(np.int64)


def keys_of(
    queries: Sequence[str], ids: Sequence[Any]
) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.int64]]]:
    """``row_keys`` of many rows at once (their queries and ``id`` values), as arrays: each
    row's id key (0 where it has no id) and its query key; the id's JSON text made as
    ``json.dumps`` makes it."""
    texts: list[str] = []
    given: list[int] = []
    for at, found in enumerate(ids):
        if isinstance(found, str):
            texts.append(encode_basestring_ascii(found))
        elif isinstance(found, int) and not isinstance(found, bool):
            texts.append(json.dumps(found))
        else:
            continue
        given.append(at)
    id_keys = np.zeros(len(ids), dtype=np.int64)
    if len(given) == len(ids):
        id_keys = _hashes(texts)
    elif given:
        id_keys[given] = _hashes(texts)
    return id_keys, _hashes(queries)
