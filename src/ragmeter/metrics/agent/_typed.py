"""Typed JSON keys: one ``bytes`` per value, equal for two values exactly when they are equal
as typed JSON (``1 == 1.0``, key order irrelevant, nested lists and objects item by item,
``true`` is not ``1``, ``"1"`` is not ``1``). A NaN equals a NaN here.

The encoding (each item delimits itself, so nothing needs escaping)::

    None  n          bool  t | f           int  i<decimal>;     (an integral float too)
    float d<repr>;   str   s<utf-8 bytes>:<utf-8>
    list  [<items>]  dict  {<key><value>...}  entries sorted by (encoded key, encoded value)

A tuple is a list, any other mapping a dict, a subclass of str, int or float its base type;
anything else ``o<bytes>:<repr>``. The compiled ``_keys`` module makes the same bytes for
dicts, lists and the JSON scalars and asks ``typed_key_python`` for anything else; without a
C compiler at install time the Python encoder does all of it (slower).

A key is a single bytes object: cheap to hash, compare and free, and never tracked by Python's
cycle collector, which matters when an evaluation makes one for every call of 10,000 rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ragmeter.datasets.agent import ToolCall

__all__ = [
    "call_keys",
    "call_keys_python",
    "distinct_counts",
    "distinct_counts_python",
    "typed_key",
    "typed_key_python",
]

#: a row's calls, or None where the row lacks them
Rows = Sequence[Sequence[ToolCall] | None]


def _text(tag: bytes, text: str) -> list[bytes]:
    data = text.encode("utf-8", "surrogatepass")
    return [b"%s%d:" % (tag, len(data)), data]


def _encode(value: Any, out: list[bytes]) -> None:
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
        entries = sorted((typed_key_python(k), typed_key_python(v)) for k, v in value.items())
        out.append(b"{")
        for key, item in entries:
            out += (key, item)
        out.append(b"}")
    elif isinstance(value, list | tuple):
        out.append(b"[")
        for item in value:
            _encode(item, out)
        out.append(b"]")
    else:
        out += _text(b"o", repr(value))


def typed_key_python(value: Any) -> bytes:
    """The typed JSON key of ``value``, in Python."""
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)


def call_keys_python(calls: Sequence[ToolCall]) -> list[bytes]:
    """Every call's key (its name and typed arguments, as the key of ``[name, arguments]``),
    in order, in Python."""
    return [typed_key_python([c[0], c[1]]) for c in calls]


def distinct_counts_python(actual: Rows, expected: Rows) -> np.ndarray:
    """Per row, ``(tp, made, wanted)``: the distinct calls (by key) both made and expected,
    made, and expected, as int64 (-1s where a row's calls are None), in Python."""
    counts = np.full((len(actual), 3), -1, dtype=np.int64)
    for i, (done, asked) in enumerate(zip(actual, expected, strict=True)):
        if done is not None and asked is not None:
            made, wanted = set(call_keys_python(done)), set(call_keys_python(asked))
            counts[i] = (len(made & wanted), len(made), len(wanted))
    return counts


Compiled = tuple[
    Callable[[Any], bytes],
    Callable[[Sequence[ToolCall]], list[bytes]],
    Callable[[Rows, Rows], np.ndarray],
]


def _load_compiled() -> Compiled:
    """The compiled key makers, or the Python ones when the install had no C compiler."""
    try:
        from ragmeter.metrics.agent import _keys
    except ImportError:
        return typed_key_python, call_keys_python, distinct_counts_python
    _keys.setup(typed_key_python)

    def distinct_counts(actual: Rows, expected: Rows) -> np.ndarray:
        found = np.frombuffer(_keys.distinct_counts(actual, expected), dtype=np.int64)
        return found.reshape(len(actual), 3)

    return _keys.typed_key, _keys.call_keys, distinct_counts


#: ``typed_key(value)``, ``call_keys(calls)`` and ``distinct_counts(actual, expected)``:
#: compiled when built, else the Python ones
typed_key, call_keys, distinct_counts = _load_compiled()
