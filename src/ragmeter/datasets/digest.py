"""What tells two datasets' rows apart: a digest of each row's content (key order aside) and
a hash of a whole dataset's rows in order, so the same rows are stored once and two versions
of a dataset say which rows were added, removed or changed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import orjson

__all__ = ["ContentHash", "content_hash", "row_digest"]

_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def row_digest(row: Any) -> bytes:
    """16 bytes that change with any value of ``row`` (a dict of JSON values), not with the
    order of its keys."""
    try:
        text = orjson.dumps(row, option=_CANONICAL)
    except TypeError:  # nested past orjson's depth (a row stored before depth limits)
        text = json.dumps(row, sort_keys=True, default=str).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


class ContentHash:
    """The hash of rows in order, fed one row at a time (rows are written as they pass)."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.rows = 0

    def add(self, row: Any) -> None:
        self._hash.update(row_digest(row))
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
