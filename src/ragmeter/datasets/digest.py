"""What tells two datasets' rows apart: a digest of each row's content (key order aside) and
a hash of a whole dataset's rows in order, so the same rows are stored once and two versions
of a dataset say which rows were added, removed or changed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import orjson

__all__ = ["ContentHash", "canonical_json", "content_hash", "row_digest"]

_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def canonical_json(row: Any) -> bytes | None:
    """``row`` as canonical JSON (keys sorted at every depth): the text its digest hashes;
    None where orjson cannot write it (a lone surrogate, an integer past 64 bits, nesting
    past its depth)."""
    try:
        return orjson.dumps(row, option=_CANONICAL)
    except TypeError:
        return None


def row_digest(row: Any) -> bytes:
    """16 bytes that change with any value of ``row`` (a dict of JSON values), not with the
    order of its keys."""
    text = canonical_json(row)
    if text is None:  # nested past orjson's depth (a row stored before depth limits)
        text = json.dumps(row, sort_keys=True, default=str).encode()
    return _digest(text)


def _digest(text: bytes) -> bytes:
    return hashlib.blake2b(text, digest_size=16).digest()


class ContentHash:
    """The hash of rows in order, fed one row at a time (rows are written as they pass)."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.rows = 0

    def add(self, row: Any) -> None:
        self._hash.update(row_digest(row))
        self.rows += 1

    def add_canonical(self, text: bytes) -> None:
        """``add`` of the row whose ``canonical_json`` is ``text``."""
        self._hash.update(_digest(text))
        self.rows += 1

    def hexdigest(self) -> str:
        """64 hex digits; two datasets with equal rows in equal order have equal ones."""
        return self._hash.hexdigest()


def content_hash(rows: Iterable[Any]) -> str:
    """``ContentHash`` of ``rows``."""
    digest = ContentHash()
    for row in rows:
        digest.add(row)
    return digest.hexdigest()
