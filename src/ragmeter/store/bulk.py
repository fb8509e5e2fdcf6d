"""Bulk writes without Python's cycle collector: a stored run builds hundreds of thousands
of tuples and dicts (its results, its dataset's rows), none of them in a cycle, and each
of the collector's passes meanwhile walks every object the process holds (the loaded
dataset's millions): at 200,000 rows those passes cost about as much as building the
tuples itself."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused", "held_until_exit"]

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while inside (reference counting still frees what is
    dropped), back as it was once the last of the threads inside leaves; a process that
    turned it off itself keeps it off."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()


def held_until_exit() -> None:
    """Leave every object made so far out of the cycle collector's passes from now on (a
    command's loaded dataset, held until the process exits): each full pass would walk
    them all, 6 s of a million-row run's store opening. For a command's process only, never
    a server's or a user's (objects left out are never collected as cycles)."""
    gc.freeze()
