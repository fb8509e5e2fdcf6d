"""Tool calls compared: typed JSON keys, argument accuracy, and the alignment of expected
with actual calls that the agent metrics share.

Two notions of equal arguments:

- *typed JSON* (ragmeter's metrics): ``1 == 1.0``, key order irrelevant, nested lists and
  objects compared item by item, but ``true`` is not ``1`` and ``"1"`` is not ``1``;
- *Python equality* (what RAGAS and DeepEval use, kept in their modes): as above, except
  that ``True == 1``.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter, deque
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ragmeter.datasets.agent import ToolCall
from ragmeter.metrics.agent._typed import call_keys, typed_key

__all__ = [
    "MAX_ALIGNED_PAIRS",
    "Pair",
    "align_ordered",
    "align_unordered",
    "argument_accuracy",
    "call_key",
    "keys_of",
    "too_many_pairs",
    "typed_key",
]

#: pairs of calls (expected x actual) one alignment compares exactly: 256 calls a side, the
#: default cap on calls per row (``[server] max_tool_calls``); a larger alignment is greedy
#: (linear), and the metrics scoring one give no score, with the reason
MAX_ALIGNED_PAIRS = 256 * 256


def too_many_pairs(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> str | None:
    """Why ``expected`` and ``actual`` are too many calls to align exactly, None when not."""
    pairs = len(expected) * len(actual)
    if pairs <= MAX_ALIGNED_PAIRS:
        return None
    return (
        f"the row has {len(expected):,} expected and {len(actual):,} actual tool calls: "
        f"{pairs:,} pairs to compare, more than the {MAX_ALIGNED_PAIRS:,} an alignment "
        "compares (calls per row are capped by max_tool_calls)"
    )


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
    subsequence; ties keep the earlier expected call). Past ``MAX_ALIGNED_PAIRS`` pairs the
    alignment is greedy (``_greedy_ordered``), linear in time and memory."""
    m, n = len(expected), len(actual)
    if not m or not n:
        return []
    if too_many_pairs(expected, actual):
        return _greedy_ordered(expected, actual)
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


def _greedy_ordered(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> list[Pair]:
    """Each expected call in turn with the next unused same-named actual call after the last
    one taken: pairs that never cross, found in linear time and memory."""
    places: dict[str, list[int]] = {}
    for j, call in enumerate(actual):
        places.setdefault(call.name, []).append(j)
    pairs: list[Pair] = []
    last = -1
    for i, call in enumerate(expected):
        found = places.get(call.name, [])
        k = bisect.bisect_right(found, last)
        if k < len(found):
            last = found[k]
            pairs.append((i, last, argument_accuracy(call.arguments, actual[last].arguments)))
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
    (ties are broken by the arguments' text). Past ``MAX_ALIGNED_PAIRS`` pairs the calls left
    after the equal ones are paired by name in order, in linear time and memory."""
    if not expected or not actual:
        return []
    pairs: list[Pair] = []
    free_expected = set(range(len(expected)))
    free_actual: dict[Hashable, deque[int]] = {}
    for j, key in enumerate(keys_of(actual)):
        free_actual.setdefault(key, deque()).append(j)
    for i, key in enumerate(keys_of(expected)):
        same = free_actual.get(key)
        if same:
            pairs.append((i, same.popleft(), 1.0))
            free_expected.discard(i)
    left_actual = sorted(j for js in free_actual.values() for j in js)
    if len(free_expected) * len(left_actual) > MAX_ALIGNED_PAIRS:
        pairs += _greedy_unordered(expected, actual, sorted(free_expected), left_actual)
    elif free_expected and left_actual:
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


def _greedy_unordered(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], left_e: list[int], left_a: list[int]
) -> list[Pair]:
    """The calls left, paired by name: the n-th left expected call of a tool with the n-th
    left actual call of it."""
    by_name: dict[str, deque[int]] = {}
    for j in left_a:
        by_name.setdefault(actual[j].name, deque()).append(j)
    pairs: list[Pair] = []
    for i in left_e:
        same = by_name.get(expected[i].name)
        if same:
            j = same.popleft()
            pairs.append((i, j, argument_accuracy(expected[i].arguments, actual[j].arguments)))
    return pairs


def name_counts(calls: Sequence[ToolCall]) -> Counter[str]:
    """How often each tool was called."""
    return Counter(c.name for c in calls)
