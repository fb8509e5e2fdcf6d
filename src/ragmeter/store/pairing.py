"""What pairs a result with the same row of another run, stored with the result so a
comparison joins two runs on an index: a 64-bit hash of the row's ``id`` (when it has one)
and of its query text. Rows pair by ``id`` when every row of both runs has one, else by
query text (``runs.views.compare``); this module says what counts as an id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xxhash

__all__ = ["is_row_id", "key_hash", "keys_of", "row_keys"]

#: a hash past this one is stored as its two's complement (a signed 64-bit column)
_SIGNED = 1 << 63
#: the seed of an integer id's hash, so that the id 1 and the id "1" differ
_INTEGER_SEED = 1


def is_row_id(value: Any) -> bool:
    """Whether ``value`` can pair rows: a string or an integer (not a boolean)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def key_hash(text: str, seed: int = 0) -> int:
    """A signed 64-bit hash of ``text`` (XXH3-64 of its UTF-8 bytes, with ``seed``): two
    distinct keys of a 100,000-row run share one with a probability near 3e-10. Not a
    defence: whoever writes the rows decides what they pair with anyway. Changing it changes
    every stored key (migration 0030 computed them again)."""
    value = xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"), seed)
    return value - 2 * _SIGNED if value >= _SIGNED else value


def _id_key(found: Any) -> int | None:
    """The key of an ``id`` value: a string's hash, an integer's decimal text's hash with
    another seed; None for anything else (no id)."""
    if not is_row_id(found):
        return None
    return key_hash(found) if isinstance(found, str) else key_hash(str(int(found)), _INTEGER_SEED)


def row_keys(query: str, row: Any) -> tuple[int | None, int]:
    """(id key, query key) of a result: the key of the row's id, or None when it has none,
    and its query's hash."""
    return _id_key(row.get("id") if isinstance(row, dict) else None), key_hash(query)


def _hashes(texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """``key_hash`` of each of ``texts``, as one array (unsigned hashes read as signed)."""
    xxh3 = xxhash.xxh3_64_intdigest
    hashes = [xxh3(t.encode("utf-8", "surrogatepass")) for t in texts]
    return np.array(hashes, dtype=np.uint64).view(np.int64)


def keys_of(
    queries: Sequence[str], ids: Sequence[Any]
) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.int64]]]:
    """``row_keys`` of many rows at once (their queries and ``id`` values), as arrays: each
    row's id key (0 where it has no id) and its query key."""
    if set(map(type, ids)) == {str}:  # the usual case: string ids, hashed as queries are
        id_keys = _hashes(ids)
    else:
        id_keys = np.fromiter(
            (key or 0 for key in map(_id_key, ids)), dtype=np.int64, count=len(ids)
        )
    return id_keys, _hashes(queries)
