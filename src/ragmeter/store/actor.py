"""Who is acting: the user a request was authorised as, for the ``created_by`` column of
what it makes. The service sets it around each request (a context variable follows the
request into the thread that serves it); the CLI leaves it unset (NULL: made locally)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["acting_as", "current_actor"]

_ACTOR: ContextVar[str | None] = ContextVar("ragmeter_actor", default=None)


def current_actor() -> str | None:
    """The name of the user acting now, or None outside a request."""
    return _ACTOR.get()


@contextmanager
def acting_as(name: str | None) -> Iterator[None]:
    """``name`` acts inside the block (and in what it starts in other threads)."""
    token = _ACTOR.set(name)
    try:
        yield
    finally:
        _ACTOR.reset(token)
