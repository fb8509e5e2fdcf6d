"""The limits on the values a row holds: how deep it nests and how long an integer may be,
and the walks that check them without recursion."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "INT_CAP",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "TooLongNumber",
    "digits_of",
    "nesting_depth",
    "scan",
    "too_deep_or_long",
]

#: how deep a row may nest (the row object is level 1) unless a caller gives its own limit;
#: far below what Python's JSON and validation can recurse through
MAX_DEPTH = 64

#: digits of an integer in a row: far beyond any id or count, and within what Python turns
#: into text (4,300 digits), which every message, JSON answer and stored row needs
MAX_INT_DIGITS = 1000
INT_CAP = 10**MAX_INT_DIGITS


class TooLongNumber:
    """An integer a JSON reader met with more than ``MAX_INT_DIGITS`` digits, kept as its
    length (never converted) so that the row check can name the field that holds it."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<an integer of {self.digits:,} digits>"


def nesting_depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests (a scalar 0, ``[]`` 1, ``[[1]]`` 2), counted without recursion
    and only up to ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        if depth > limit:
            return depth
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def digits_of(item: Any) -> int | None:
    """The digits of ``item`` if it is an integer over ``MAX_INT_DIGITS`` (at least that many
    for one Python made, counted from its bits), else None."""
    if isinstance(item, TooLongNumber):
        return item.digits
    if isinstance(item, int) and not isinstance(item, bool) and abs(item) >= INT_CAP:
        return max(MAX_INT_DIGITS + 1, int(item.bit_length() * math.log10(2)))
    return None


def scan(value: Any, limit: int) -> tuple[int, int | None]:
    """One walk of ``value`` without recursion: how deep it nests (up to ``limit + 1``) and
    the digits of the first integer too long to write down, or None. Strings and the other
    scalars a row is made of are passed over at once, never put on the walk's stack (this
    runs for every row)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            children: Any = [*item.keys(), *item.values()]
        elif kind is list or kind is tuple:
            children = item
        elif kind is str or kind is float or item is None or kind is bool:
            continue
        elif isinstance(item, Mapping):
            children = [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple | set | frozenset):
            children = item
        else:
            digits = digits_of(item)
            if digits is not None:
                return deepest, digits
            continue
        depth += 1
        if depth > limit:
            return depth, None
        deepest = max(deepest, depth)
        for child in children:
            kind = type(child)
            if kind is str or kind is float or child is None or kind is bool:
                continue
            if kind is int and -INT_CAP < child < INT_CAP:
                continue  # an integer short enough: nothing to walk or check
            stack.append((child, depth))
    return deepest, None


def too_deep_or_long(value: Any, room: int) -> tuple[bool, int | None]:
    """Whether ``value`` nests deeper than ``room`` levels, and the digits of an integer in it
    too long to write down (None if there is none). A flat object of strings, short numbers
    and the like, which most values are, is passed without a walk."""
    if type(value) is dict and room >= 1:
        for key, item in value.items():
            kind = type(item)
            if type(key) is not str:
                break
            if kind is str or kind is float or item is None or kind is bool:
                continue
            if kind is int and -INT_CAP < item < INT_CAP:
                continue
            break
        else:
            return False, None
    depth, digits = scan(value, room)
    return depth > room, digits
