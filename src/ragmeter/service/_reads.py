"""Results pages as JSON, each large text once, read a bounded number at a time.

A page's results are serialized one by one (orjson) and each record is let go as soon as
its bytes are made, so a page takes about its own size in memory once, whatever the
texts it holds; at most ``[server] max_reads`` pages are read at once (the others wait up
to ``WAIT_SECONDS``, then get a 429 naming the setting)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import orjson

from ragmeter.errors import LimitError
from ragmeter.service._runs import result_dict

__all__ = ["READS", "WAIT_SECONDS", "ReadSlots", "result_chunks", "single_copy"]

#: seconds a results read waits for a slot before its 429
WAIT_SECONDS = 30.0


class ReadSlots:
    """At most ``limit`` reads at once in this process."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = 0

    @contextlib.contextmanager
    def slot(self, limit: int, wait: float = WAIT_SECONDS) -> Iterator[None]:
        with self._cond:
            if not self._cond.wait_for(lambda: self._busy < limit, timeout=wait):
                raise LimitError(
                    f"{limit} results pages are being read; try again shortly",
                    setting="[server] max_reads",
                    status=429,
                )
            self._busy += 1
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify()


#: the server's results reads (one server per process)
READS = ReadSlots()


def single_copy(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` whose ``raw_dataset`` leaves out the fields the item holds itself with the
    same value (the row's ``query`` is the result's)."""
    raw = item.get("raw_dataset")
    if isinstance(raw, dict) and "query" in raw and raw["query"] == item.get("query"):
        item["raw_dataset"] = {k: v for k, v in raw.items() if k != "query"}
    return item


def result_chunks(found: list[Any], total: int, offset: int, limit: int) -> list[bytes]:
    """The envelope of a page of results (``Result[Page[ResultItem]]``) in pieces, the
    records of ``found`` let go as they are written."""
    chunks = [b'{"success":true,"err_code":null,"err_msg":null,"data":{"items":[']
    found.reverse()
    first = True
    while found:
        record = found.pop()
        item = orjson.dumps(single_copy(result_dict(record)), option=orjson.OPT_SERIALIZE_NUMPY)
        del record
        if not first:
            chunks.append(b",")
        chunks.append(item)
        first = False
    tail = {"total": total, "offset": offset, "limit": limit}
    chunks.append(b"]," + orjson.dumps(tail)[1:] + b"}")
    return chunks
