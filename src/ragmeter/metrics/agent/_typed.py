"""Typed JSON keys: one ``bytes`` per value, equal for two values exactly when they are equal
as typed JSON (``1 == 1.0``, key order irrelevant, nested lists and objects item by item,
``true`` is not ``1``, ``"1"`` is not ``1``). A NaN equals a NaN here.

A value JSON can write exactly is keyed by its canonical JSON (orjson, keys sorted) after
integral floats became integers, subclasses of str, int and float their base type, tuples
lists and other mappings dicts: the usual arguments of a tool call take one check and one
call to orjson. Anything else (NaN or infinity, integers beyond 64 bits, keys that are not
text, other objects) takes the typed encoding below, marked by a first byte (0xff) that JSON
text never starts with. Whether a value is written as JSON depends only on its typed value,
so equal values always take the same way::

    None  n          bool  t | f           int  i<decimal>;     (an integral float too)
    float d<repr>;   str   s<utf-8 bytes>:<utf-8>
    list  [<items>]  dict  {<key><value>...}  entries sorted by (encoded key, encoded value)
    anything else    o<bytes>:<repr>

Containers are read from a snapshot (their items listed once), so an item whose ``repr`` or
``str`` changes them cannot make a key of a half-changed value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from ragmeter.datasets.agent import ToolCall

__all__ = ["call_keys", "distinct_counts", "typed_key"]

#: a row's calls, or None where the row lacks them
Rows = Sequence[Sequence[ToolCall] | None]
_SORTED = orjson.OPT_SORT_KEYS
_LOWEST, _HIGHEST = -(2**63), 2**64 - 1  # the integers orjson writes
_TYPED = b"\xff"


class _NotJson(Exception):
    """The value has a part JSON cannot write exactly."""


def typed_key(value: Any) -> bytes:
    """The typed JSON key of ``value``."""
    try:
        if _canonical(value):
            return orjson.dumps(value, option=_SORTED)
        return orjson.dumps(_as_json(value), option=_SORTED)
    except (_NotJson, orjson.JSONEncodeError):  # JSONEncodeError: lone surrogates, depth
        out = [_TYPED]
        _encode(value, out)
        return b"".join(out)


def call_keys(calls: Sequence[ToolCall]) -> list[bytes]:
    """Every call's key (its name and typed arguments, as the key of ``[name, arguments]``),
    in order."""
    out = []
    for call in tuple(calls):
        name, arguments = call[0], call[1]
        if type(name) is str and _canonical(arguments):  # the usual call, in one step
            try:
                out.append(orjson.dumps((name, arguments), option=_SORTED))
                continue
            except orjson.JSONEncodeError:  # a lone surrogate: typed_key's way
                pass
        out.append(typed_key([name, arguments]))
    return out


def distinct_counts(actual: Rows, expected: Rows) -> np.ndarray:
    """Per row, ``(tp, made, wanted)``: the distinct calls (by key) both made and expected,
    made, and expected, as int64 (-1s where a row's calls are None)."""
    counts = np.full((len(actual), 3), -1, dtype=np.int64)
    for i, (done, asked) in enumerate(zip(actual, expected, strict=True)):
        if done is not None and asked is not None:
            made, wanted = set(call_keys(done)), set(call_keys(asked))
            counts[i] = (len(made & wanted), len(made), len(wanted))
    return counts


def _canonical(value: Any) -> bool:
    """Whether orjson writes ``value`` as it is as its key: JSON's own types only (exact
    types, text keys, integers in 64 bits, no integral or non-finite float)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(_LOWEST <= value <= _HIGHEST)
    if kind is float:
        return math.isfinite(value) and not value.is_integer()
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            kind = type(item)
            if kind is str or item is None or kind is bool:
                continue
            if kind is int:
                if not _LOWEST <= item <= _HIGHEST:
                    return False
            elif not _canonical(item):
                return False
        return True
    if kind is list or kind is tuple:
        return all(map(_canonical, value))
    return False


def _as_json(value: Any) -> Any:
    """``value`` as JSON's own types, equal as typed JSON; _NotJson if JSON cannot write it
    exactly (the caller then takes the typed encoding)."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        number = float(value)
        if not math.isfinite(number):
            raise _NotJson
        value = int(number) if number.is_integer() else number
        if isinstance(value, float):
            return value
    if isinstance(value, int):
        number = int(value)
        if not _LOWEST <= number <= _HIGHEST:
            raise _NotJson
        return number
    if isinstance(value, Mapping):
        out = {}
        for key, item in list(value.items()):
            if not isinstance(key, str):
                raise _NotJson
            out[str(key)] = _as_json(item)
        return out
    if isinstance(value, list | tuple):
        return [_as_json(item) for item in list(value)]
    raise _NotJson


def _text(tag: bytes, text: str) -> list[bytes]:
    data = text.encode("utf-8", "surrogatepass")
    return [b"%s%d:" % (tag, len(data)), data]


def _encode(value: Any, out: list[bytes]) -> None:
    """The typed encoding of ``value``, appended to ``out``."""
    if value is None:
        out.append(b"n")
    elif value is True or value is False:
        out.append(b"t" if value else b"f")
    elif isinstance(value, str):
        out += _text(b"s", str(value))
    elif isinstance(value, int):
        out.append(b"i%d;" % int(value))
    elif isinstance(value, float):
        number = float(value)
        if number.is_integer():
            out.append(b"i%d;" % int(number))
        else:
            out.append(b"d%s;" % repr(number).encode("ascii"))
    elif isinstance(value, Mapping):
        entries = sorted((_encoded(k), _encoded(v)) for k, v in list(value.items()))
        out.append(b"{")
        for key, item in entries:
            out += (key, item)
        out.append(b"}")
    elif isinstance(value, list | tuple):
        out.append(b"[")
        for item in list(value):
            _encode(item, out)
        out.append(b"]")
    else:
        out += _text(b"o", repr(value))


def _encoded(value: Any) -> bytes:
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)
