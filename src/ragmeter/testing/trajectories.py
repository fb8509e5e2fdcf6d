"""Seeded random agent trajectories, for the parity tests against RAGAS and DeepEval and for
the agent benchmark: rows with a conversation in OpenAI's chat format (assistant
``tool_calls`` with JSON-text arguments, tool results by ``tool_call_id``) and the expected
calls, the actual calls made from the expected ones with the faults agents make: missing,
extra, repeated and reordered calls, wrong or retyped arguments (``1`` for ``1.0``),
arguments in another key order, nested lists and objects."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

__all__ = ["TOOL_NAMES", "random_trajectories", "random_trajectory"]

TOOL_NAMES = ("search", "weather", "book_hotel", "send_mail", "convert")
_WORDS = ("Paris", "Rome", "tea", "AWEL", "north", "blue", "", "a b", "北京")


def _scalar(rng: random.Random) -> Any:
    kind = rng.randrange(3)
    if kind == 0:
        return rng.randint(-3, 5)
    if kind == 1:
        return rng.choice((0.5, 1.0, 2.0, -1.5, 1e-3, 3.25))
    return rng.choice(_WORDS)


def _nested(rng: random.Random, depth: int = 0) -> Any:
    if depth >= 2 or rng.random() < 0.4:
        return _scalar(rng)
    if rng.random() < 0.5:
        return [_nested(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = rng.sample(("x", "y", "unit", "lang"), rng.randrange(1, 4))
    return {k: _nested(rng, depth + 1) for k in keys}


#: argument names and how their values are drawn: booleans only under ``flag``, so a boolean
#: never meets a number under one name (RAGAS and DeepEval take ``True == 1``)
_ARGUMENTS: dict[str, Callable[[random.Random], Any]] = {
    "query": lambda rng: rng.choice(_WORDS),
    "city": lambda rng: rng.choice(("Paris", "Rome", "Oslo")),
    "count": lambda rng: rng.randint(0, 4),
    "ratio": lambda rng: rng.choice((1, 1.0, 2, 2.0, 0.5)),
    "tags": lambda rng: [_scalar(rng) for _ in range(rng.randrange(4))],
    "options": lambda rng: _nested(rng, 1),
    "flag": lambda rng: rng.random() < 0.5,
}


def _arguments(rng: random.Random, nested: bool) -> dict[str, Any]:
    names = [n for n in _ARGUMENTS if nested or n not in ("tags", "options")]
    chosen = rng.sample(names, rng.randrange(0, 4))
    return {name: _ARGUMENTS[name](rng) for name in chosen}


def _retyped(value: Any) -> Any:
    """The same JSON value written another way: 1 <-> 1.0, object keys reversed."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _retyped(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_retyped(v) for v in value]
    return value


def _mutated(rng: random.Random, call: dict[str, Any], nested: bool) -> dict[str, Any]:
    arguments = dict(call["arguments"])
    change = rng.randrange(5)
    if change == 0 and arguments:  # a wrong value
        name = rng.choice(list(arguments))
        arguments[name] = _ARGUMENTS[name](rng)
    elif change == 1 and arguments:  # an argument left out
        del arguments[rng.choice(list(arguments))]
    elif change == 2:  # an argument added
        arguments.update(_arguments(rng, nested))
    elif change == 3:  # the same values written another way
        arguments = _retyped(arguments)
    else:  # the keys in another order
        arguments = dict(reversed(list(arguments.items())))
    name = call["name"] if rng.random() < 0.85 else rng.choice(TOOL_NAMES)
    return {"name": name, "arguments": arguments}


def _actual(rng: random.Random, expected: list[dict[str, Any]], nested: bool) -> list[Any]:
    if rng.random() < 0.08:  # an unrelated trajectory
        return [
            {"name": rng.choice(TOOL_NAMES), "arguments": _arguments(rng, nested)}
            for _ in range(rng.randrange(4))
        ]
    actual = []
    for call in expected:
        roll = rng.random()
        if roll < 0.1:
            continue  # missing
        actual.append(_mutated(rng, call, nested) if roll < 0.45 else dict(call))
        if rng.random() < 0.07:
            actual.append(dict(actual[-1]))  # repeated
    for _ in range(rng.choice((0, 0, 0, 1, 2))):  # extra calls
        extra = {"name": rng.choice(TOOL_NAMES), "arguments": _arguments(rng, nested)}
        actual.insert(rng.randrange(len(actual) + 1), extra)
    if len(actual) > 1 and rng.random() < 0.25:  # reordered
        if rng.random() < 0.5:
            rng.shuffle(actual)
        else:
            i = rng.randrange(len(actual) - 1)
            actual[i], actual[i + 1] = actual[i + 1], actual[i]
    return actual


def _malformed(rng: random.Random, actual: list[dict[str, Any]]) -> None:
    """One call's arguments as a JSON value that is not an object (a list or a scalar), as
    a faulty agent writes them: valid JSON, which the peers' typed calls refuse."""
    if actual:
        at = rng.randrange(len(actual))
        actual[at] = {**actual[at], "arguments": rng.choice(([1, 2], "Paris", 3, None, []))}


def _messages(rng: random.Random, calls: list[dict[str, Any]], number: int) -> list[Any]:
    """An OpenAI conversation making ``calls`` in one or more assistant turns."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": f"Task {number}: plan it with the tools."}
    ]
    at = 0
    while at < len(calls):
        take = rng.randint(1, len(calls) - at)
        turn = []
        for k, call in enumerate(calls[at : at + take]):
            turn.append(
                {
                    "id": f"call_{at + k}",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
            )
        messages.append({"role": "assistant", "content": None, "tool_calls": turn})
        for item in turn:
            messages.append({"role": "tool", "tool_call_id": item["id"], "content": "done"})
        at += take
    messages.append({"role": "assistant", "content": f"Task {number} is done."})
    return messages


def random_trajectory(rng: random.Random, number: int = 0, nested: bool = True) -> dict[str, Any]:
    """One row: ``messages`` (OpenAI format) and ``reference_tool_calls``."""
    expected = [
        {"name": rng.choice(TOOL_NAMES), "arguments": _arguments(rng, nested)}
        for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 3, 4, 5)))
    ]
    actual = _actual(rng, expected, nested)
    if rng.random() < 0.02:
        _malformed(rng, actual)
    return {"messages": _messages(rng, actual, number), "reference_tool_calls": expected}


def random_trajectories(count: int, seed: int = 0, nested: bool = True) -> list[dict[str, Any]]:
    """``count`` rows from ``seed``; ``nested=False`` keeps arguments flat (no lists or
    objects as values)."""
    rng = random.Random(seed)
    return [random_trajectory(rng, i, nested) for i in range(count)]
