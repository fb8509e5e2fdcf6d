"""An agent row's trajectory for the Row view: its conversation step by step, each call with
the result its tool gave, and the expected calls aligned with the calls made.

The alignment keeps both orders: the longest common subsequence of the two call lists by
name, preferring pairs whose arguments are equal too; what is left is missing (expected, not
made) or extra (made, not expected), placed where it occurred. Arguments compare as JSON
values (``1 == 1.0``, key order irrelevant)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.wire import ArgumentDiff, Trajectory, TrajectoryCall, TrajectoryPair, TrajectoryStep

__all__ = ["align_calls", "same_json", "trajectory_of"]


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value (``1 == 1.0``), booleans only to booleans,
    objects whatever their key order, arrays item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _call(raw: Mapping[str, Any], result: str | None = None) -> TrajectoryCall:
    return TrajectoryCall(
        name=str(raw.get("name") or ""), arguments=raw.get("arguments"), result=result
    )


def trajectory_of(raw: Mapping[str, Any]) -> Trajectory | None:
    """The trajectory of a stored row (its ``messages`` and ``reference_tool_calls`` as the
    store keeps them); None when the row has no conversation."""
    messages = _dicts(raw.get("messages"))
    if not messages:
        return None
    results = {
        str(m["tool_call_id"]): str(m.get("content") or "")
        for m in messages
        if m.get("role") == "tool" and m.get("tool_call_id") is not None
    }
    steps: list[TrajectoryStep] = []
    made: list[TrajectoryCall] = []
    for m in messages:
        calls = [
            _call(c, results.get(str(c.get("id"))) if c.get("id") is not None else None)
            for c in _dicts(m.get("tool_calls"))
        ]
        made += calls
        steps.append(
            TrajectoryStep(
                role=str(m.get("role")), content=str(m.get("content") or ""), calls=calls
            )
        )
    expected = [_call(c) for c in _dicts(raw.get("reference_tool_calls"))]
    return Trajectory(steps=steps, pairs=align_calls(expected, made) if expected else [])


def align_calls(
    expected: Sequence[TrajectoryCall], actual: Sequence[TrajectoryCall]
) -> list[TrajectoryPair]:
    """``expected`` and ``actual`` side by side (see the module's rule)."""
    n, m = len(expected), len(actual)
    # best[i][j]: (pairs by name, of them with equal arguments) over expected[i:], actual[j:]
    best = [[(0, 0)] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            options = [best[i + 1][j], best[i][j + 1]]
            if expected[i].name == actual[j].name:
                pairs, equal = best[i + 1][j + 1]
                same = same_json(expected[i].arguments, actual[j].arguments)
                options.append((pairs + 1, equal + same))
            best[i][j] = max(options)
    out: list[TrajectoryPair] = []
    i = j = 0
    while i < n or j < m:
        if i < n and j < m and expected[i].name == actual[j].name:
            pairs, equal = best[i + 1][j + 1]
            same = same_json(expected[i].arguments, actual[j].arguments)
            if (pairs + 1, equal + same) == best[i][j]:
                out.append(_pair(expected[i], actual[j]))
                i, j = i + 1, j + 1
                continue
        if i < n and (j == m or best[i + 1][j] == best[i][j]):
            out.append(TrajectoryPair(status="missing", expected=expected[i]))
            i += 1
        else:
            out.append(TrajectoryPair(status="extra", actual=actual[j]))
            j += 1
    return out


def _pair(expected: TrajectoryCall, actual: TrajectoryCall) -> TrajectoryPair:
    same = same_json(expected.arguments, actual.arguments)
    return TrajectoryPair(
        status="match" if same else "arguments",
        expected=expected,
        actual=actual,
        arguments=_argument_diff(expected.arguments, actual.arguments),
    )


def _argument_diff(expected: Any, actual: Any) -> list[ArgumentDiff]:
    """Per argument of two calls' argument objects (one entry for non-object arguments)."""
    if not isinstance(expected, Mapping) or not isinstance(actual, Mapping):
        return [
            ArgumentDiff(
                key="", expected=expected, actual=actual, equal=same_json(expected, actual)
            )
        ]
    keys = list(dict.fromkeys([*expected, *actual]))
    return [
        ArgumentDiff(
            key=str(key),
            expected=expected.get(key),
            actual=actual.get(key),
            equal=key in expected and key in actual and same_json(expected[key], actual[key]),
        )
        for key in keys
    ]
