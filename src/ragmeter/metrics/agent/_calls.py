"""Tool calls compared: typed JSON keys, argument accuracy, and the alignment of expected
with actual calls that the agent metrics share.

Two notions of equal arguments:

- *typed JSON* (ragmeter's metrics): ``1 == 1.0``, key order irrelevant, nested lists and
  objects compared item by item, but ``true`` is not ``1`` and ``"1"`` is not ``1``;
- *Python equality* (what RAGAS and DeepEval use, kept in their modes): as above, except
  that ``True == 1``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ragmeter.datasets.agent import ToolCall
from ragmeter.metrics.agent._typed import call_keys, typed_key

__all__ = [
    "Pair",
    "align_ordered",
    "align_unordered",
    "argument_accuracy",
    "call_key",
    "keys_of",
    "typed_key",
]


def call_key(call: ToolCall, arguments: bool = True) -> Hashable:
    """A call's key: its name and (``arguments``) its typed arguments."""
    return call_keys((call,))[0] if arguments else call.name


def keys_of(calls: Sequence[ToolCall]) -> Sequence[bytes]:
    """Every call's key (name and typed arguments), in order."""
    return call_keys(calls)


def argument_accuracy(expected: Any, actual: Any) -> float:
    """Share of argument names, over both calls, whose values are equal as typed JSON::

        accuracy = |{k in K_e & K_a : e[k] == a[k]}| / |K_e | K_a|

    1 when neither call has arguments. Arguments that are not objects count as one value:
    1 if equal, else 0."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        names = expected.keys() | actual.keys()
        if not names:
            return 1.0
        same = sum(
            1
            for k in expected.keys() & actual.keys()
            if typed_key(expected[k]) == typed_key(actual[k])
        )
        return same / len(names)
    return 1.0 if typed_key(expected) == typed_key(actual) else 0.0


#: an aligned pair: (index in the expected calls, index in the actual calls, accuracy)
Pair = tuple[int, int, float]


def align_ordered(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> list[Pair]:
    """Expected and actual calls aligned in order: the pairs of same-named calls, neither
    crossing another, of the largest total argument accuracy (a weighted longest common
    subsequence; ties keep the earlier expected call)."""
    m, n = len(expected), len(actual)
    if not m or not n:
        return []
    weights = [
        [argument_accuracy(e.arguments, a.arguments) if e.name == a.name else -1.0 for a in actual]
        for e in expected
    ]
    best = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        row, above, w = best[i], best[i - 1], weights[i - 1]
        for j in range(1, n + 1):
            value = max(above[j], row[j - 1])
            if w[j - 1] >= 0.0 and above[j - 1] + w[j - 1] > value:
                value = above[j - 1] + w[j - 1]
            row[j] = value
    pairs: list[Pair] = []
    i, j = m, n
    while i and j:
        weight = weights[i - 1][j - 1]
        if (
            weight >= 0.0
            and best[i][j] == best[i - 1][j - 1] + weight
            and best[i][j] > max(best[i - 1][j], best[i][j - 1])
        ):
            pairs.append((i - 1, j - 1, weight))
            i, j = i - 1, j - 1
        elif best[i][j] == best[i - 1][j]:
            i -= 1
        else:
            j -= 1
    pairs.reverse()
    return pairs


def _order_key(call: ToolCall) -> str:
    """A stable text of a call's arguments, to break ties the same way whatever the order
    (calls whose arguments are equal as typed JSON but written apart, ``1`` and ``1.0``, weigh
    the same against every other call, so which of them is taken changes nothing)."""
    return json.dumps(call.arguments, sort_keys=True, default=repr)


def align_unordered(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> list[Pair]:
    """Expected and actual calls paired regardless of order, each call at most once, only
    same-named calls: first the calls equal as typed JSON, then the remaining pairs by
    descending argument accuracy. The pairs found depend on the calls, not on their order
    (ties are broken by the arguments' text)."""
    if not expected or not actual:
        return []
    pairs: list[Pair] = []
    free_expected = set(range(len(expected)))
    free_actual: dict[Hashable, list[int]] = {}
    for j, key in enumerate(keys_of(actual)):
        free_actual.setdefault(key, []).append(j)
    for i, key in enumerate(keys_of(expected)):
        same = free_actual.get(key)
        if same:
            pairs.append((i, same.pop(0), 1.0))
            free_expected.discard(i)
    left_actual = sorted(j for js in free_actual.values() for j in js)
    if free_expected and left_actual:
        candidates = [
            (-argument_accuracy(expected[i].arguments, actual[j].arguments), i, j)
            for i in free_expected
            for j in left_actual
            if expected[i].name == actual[j].name
        ]
        candidates.sort(key=lambda c: (c[0], _order_key(expected[c[1]]), _order_key(actual[c[2]])))
        used_e: set[int] = set()
        used_a: set[int] = set()
        for weight, i, j in candidates:
            if i not in used_e and j not in used_a:
                used_e.add(i)
                used_a.add(j)
                pairs.append((i, j, -weight))
    pairs.sort()
    return pairs


def name_counts(calls: Sequence[ToolCall]) -> Counter[str]:
    """How often each tool was called."""
    return Counter(c.name for c in calls)
