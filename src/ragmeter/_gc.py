"""``paused_gc``: the cyclic garbage collector held off while a batch builds many small
objects (rows, messages, keys of tool calls) and no reference cycles.

Each full collection walks every object alive, and a loaded dataset is millions of them: over
a batch of 10,000 agent rows the collector took two to four times the work itself. Memory is
still freed as usual (by reference counting); only the search for cycles waits until the
batch ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold off cyclic garbage collection inside the block (nested blocks are fine; it is
    turned back on only if it was on)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
