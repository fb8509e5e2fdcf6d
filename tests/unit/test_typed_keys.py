"""Typed JSON keys: two keys are equal exactly when the values are equal as typed JSON (checked
against a plain recursive comparison written from the definition), whichever way a value is
keyed (canonical JSON, or the typed encoding for what JSON cannot write), and values whose
own code changes them while they are keyed cannot corrupt a key."""

from __future__ import annotations

import math
from collections import OrderedDict
from enum import IntEnum
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.datasets.agent import ToolCall
from ragmeter.metrics.agent import _typed

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.sampled_from([0, 1, -1, 2, 10**19, -(2**63), 2**63])
    | st.floats(allow_nan=False, width=64)
    | st.sampled_from(
        [0.0, -0.0, 1.0, 2.0, 0.5, 1e300, float("inf"), float("-inf"), 1e-5, float("nan")]
    )
    | st.text(max_size=6)
    | st.sampled_from(["", "1", "true", "\ud800", "北京", "s3:abc", "{", "]"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


def typed_equal(a: Any, b: Any) -> bool:
    """Typed JSON equality from the definition: numbers by value, booleans apart, key order
    irrelevant, lists item by item, NaN equal to NaN."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(typed_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(typed_equal(x, y) for x, y in zip(a, b, strict=True))
    return False


@settings(max_examples=400, deadline=None)
@given(json_values, json_values)
def test_keys_are_equal_exactly_when_the_values_are_typed_equal(a: Any, b: Any) -> None:
    assert (_typed.typed_key(a) == _typed.typed_key(b)) == typed_equal(a, b)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=3), json_values, max_size=6), st.randoms())
def test_key_order_does_not_matter(value: dict[str, Any], rng: Any) -> None:
    items = list(value.items())
    rng.shuffle(items)
    assert _typed.typed_key(dict(items)) == _typed.typed_key(value)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (-0.0, 0, True),
        (True, 1, False),
        ("1", 1, False),
        ([1, 2], [2, 1], False),
        ({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]}, True),
        (10**23, 1e23, False),  # 1e23 is not exactly 10**23
        (2**70, float(2**70), True),
        (float("nan"), float("nan"), True),
        ("s1:a", ["a"], False),
        ({"ab": "c"}, {"a": "bc"}, False),
    ],
)
def test_hand_picked_pairs(a: Any, b: Any, equal: bool) -> None:
    assert (_typed.typed_key(a) == _typed.typed_key(b)) is equal


class Level(IntEnum):
    LOW = 1


def test_other_types_key_as_the_json_values_they_equal() -> None:
    exotic = {
        "t": (1, 2.0),
        "m": MappingProxyType({"x": [True]}),
        "o": OrderedDict(b=1, a=2),
        "e": Level.LOW,
        "s": type("Text", (str,), {})("hi"),
        "f": type("Real", (float,), {})(3.0),
    }
    plain = {"t": [1, 2], "m": {"x": [True]}, "o": {"a": 2, "b": 1}, "e": 1, "s": "hi", "f": 3}
    assert _typed.typed_key(exotic) == _typed.typed_key(plain)
    thing = object.__new__(type("Thing", (), {"__repr__": lambda self: "<thing>"}))
    other = object.__new__(type("Other", (), {"__repr__": lambda self: "<thing>"}))
    assert _typed.typed_key({**exotic, "x": thing}) == _typed.typed_key({**plain, "x": other})
    assert _typed.typed_key({**plain, "x": thing}) != _typed.typed_key({**plain, "x": "<thing>"})


def test_what_json_cannot_write_keys_apart_from_what_it_can() -> None:
    """NaN, integers beyond 64 bits, keys that are not text, lone surrogates: keyed by the
    typed encoding, never equal to a JSON value's key."""
    for value, near in [
        (float("nan"), None),
        (2**64, 2**64 - 1),
        ({1: "a"}, {"1": "a"}),
        ("\ud800", "?"),
        ([float("inf")], [None]),
    ]:
        assert _typed.typed_key(value).startswith(b"\xff")
        assert not _typed.typed_key(near).startswith(b"\xff")
        assert _typed.typed_key(value) != _typed.typed_key(near)
    assert _typed.typed_key(2**64) == _typed.typed_key(float(2**64))


def test_call_keys_are_the_keys_of_name_and_arguments() -> None:
    calls = [ToolCall("weather", {"city": "Paris", "days": 2}), ToolCall("x", [1]), ToolCall("y")]
    keys = _typed.call_keys(calls)
    assert keys == [_typed.typed_key([c.name, c.arguments]) for c in calls]
    assert keys[0] == _typed.typed_key(["weather", {"days": 2.0, "city": "Paris"}])
    nan = ToolCall("weather", {"city": "Paris", "days": float("nan")})
    assert _typed.call_keys([nan]) == [_typed.typed_key(["weather", nan.arguments])]


class _Meddler:
    """An argument value whose own code (repr, hash, equality) empties the calls it is keyed
    with and rewrites the arguments that hold it."""

    def __init__(self, calls: list[ToolCall], arguments: dict[str, Any]) -> None:
        self.calls, self.arguments = calls, arguments

    def _meddle(self) -> None:
        self.calls.clear()
        self.arguments.clear()
        self.arguments.update(other=[1, 2, 3])

    def __repr__(self) -> str:
        self._meddle()
        return "<meddler>"

    def __hash__(self) -> int:
        self._meddle()
        return 1

    def __eq__(self, other: object) -> bool:
        self._meddle()
        return other is self


def test_values_that_change_their_calls_while_keyed_cannot_corrupt_the_keys() -> None:
    """A key is made from the calls and arguments as they were when asked for: an argument
    whose repr, hash or equality empties the list of calls and rewrites its own arguments
    changes neither the keys made nor their number."""
    arguments: dict[str, Any] = {"a": 1}
    calls = [ToolCall("f", arguments), ToolCall("g", {"b": 2})]
    arguments["m"] = _Meddler(calls, arguments)
    twin = object.__new__(type("Twin", (), {"__repr__": lambda self: "<meddler>"}))
    expected = [
        _typed.typed_key(["f", {"a": 1, "m": twin}]),
        _typed.typed_key(["g", {"b": 2}]),
    ]
    assert _typed.call_keys(calls) == expected
    assert calls == []  # the value did meddle
    counts = _typed.distinct_counts([[ToolCall("f", {"m": _Meddler([], {})})]], [[]])
    assert counts.tolist() == [[0, 1, 0]]


def test_a_value_too_deep_raises_instead_of_crashing() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        _typed.typed_key(deep)


calls = st.lists(st.builds(ToolCall, st.sampled_from(["f", "g"]), json_values), max_size=5).map(
    lambda found: found + found[:1]
)  # a repeated call now and then
rows_of_calls = st.lists(st.one_of(st.none(), calls), max_size=6)


@settings(max_examples=300, deadline=None)
@given(rows_of_calls, st.data())
def test_distinct_counts_count_the_distinct_keys(actual: list[Any], data: Any) -> None:
    expected = data.draw(st.lists(st.one_of(st.none(), calls), min_size=len(actual),
                                  max_size=len(actual)))  # fmt: skip
    counts = _typed.distinct_counts(actual, expected)
    for (tp, made, wanted), done, asked in zip(counts.tolist(), actual, expected, strict=True):
        if done is None or asked is None:
            assert (tp, made, wanted) == (-1, -1, -1)
        else:
            keys = {_typed.typed_key([c.name, c.arguments]) for c in done}
            wants = {_typed.typed_key([c.name, c.arguments]) for c in asked}
            assert (tp, made, wanted) == (len(keys & wants), len(keys), len(wants))
