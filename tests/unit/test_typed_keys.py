"""Typed JSON keys: the compiled encoder makes the very bytes the Python one does, and two
keys are equal exactly when the values are equal as typed JSON (checked against a plain
recursive comparison written from the definition)."""

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
from ragmeter.metrics.agent._typed import call_keys_python, typed_key_python

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.sampled_from([0, 1, -1, 2, 10**19, -(2**63), 2**63])
    | st.floats(allow_nan=False, width=64)
    | st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, 1e300, float("inf"), float("-inf"), 1e-5])
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


def test_the_compiled_encoder_is_built() -> None:
    assert _typed.typed_key is not typed_key_python, (
        "ragmeter.metrics.agent._keys was not built: the install needs a C compiler (gcc)"
    )


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_compiled_keys_are_the_python_keys(value: Any) -> None:
    assert _typed.typed_key(value) == typed_key_python(value)


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
    assert (typed_key_python(a) == typed_key_python(b)) is equal


class Level(IntEnum):
    LOW = 1


def test_other_types_take_the_python_path_inside_compiled_values() -> None:
    exotic = {
        "t": (1, 2.0),
        "m": MappingProxyType({"x": [True]}),
        "o": OrderedDict(b=1, a=2),
        "e": Level.LOW,
        "s": type("Text", (str,), {})("hi"),
        "x": object.__new__(type("Thing", (), {"__repr__": lambda self: "<thing>"})),
    }
    plain = {"t": [1, 2], "m": {"x": [True]}, "o": {"a": 2, "b": 1}, "e": 1, "s": "hi"}
    key = _typed.typed_key(exotic)
    assert key == typed_key_python(exotic)
    assert _typed.typed_key({**plain, "x": exotic["x"]}) == key


def test_call_keys_are_the_keys_of_name_and_arguments() -> None:
    calls = [ToolCall("weather", {"city": "Paris", "days": 2}), ToolCall("x", [1]), ToolCall("y")]
    assert _typed.call_keys(calls) == call_keys_python(calls)
    assert _typed.call_keys(calls)[0] == _typed.typed_key(
        ["weather", {"days": 2.0, "city": "Paris"}]
    )
    with pytest.raises(TypeError):
        _typed.call_keys([{"name": "x"}])  # type: ignore[list-item]


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
def test_distinct_counts_compiled_are_the_python_counts(actual: list[Any], data: Any) -> None:
    expected = data.draw(st.lists(st.one_of(st.none(), calls), min_size=len(actual),
                                  max_size=len(actual)))  # fmt: skip
    compiled = _typed.distinct_counts(actual, expected)
    assert compiled.tolist() == _typed.distinct_counts_python(actual, expected).tolist()
    for (tp, made, wanted), done, asked in zip(compiled.tolist(), actual, expected, strict=True):
        if done is None or asked is None:
            assert (tp, made, wanted) == (-1, -1, -1)
        else:
            keys = {_typed.typed_key([c.name, c.arguments]) for c in done}
            wants = {_typed.typed_key([c.name, c.arguments]) for c in asked}
            assert (tp, made, wanted) == (len(keys & wants), len(keys), len(wants))
