"""An agent row's trajectory for the Row view: its conversation step by step, each call with
the result its tool gave, and the expected calls aligned with the calls made.

The alignment is the one ``tool_call_accuracy`` scores (``align_ordered``): same-named calls
paired in order, of the largest total argument accuracy; what is left is missing (expected,
not made) or extra (made, not expected), placed where it occurred. Arguments compare as typed
JSON values (``typed_key``: ``1 == 1.0``, key order irrelevant, ``true`` is not ``1``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.datasets.agent import ToolCall
from ragmeter.metrics.agent import align_ordered, typed_key
from ragmeter.wire.trajectory import (
    ArgumentDiff,
    Trajectory,
    TrajectoryCall,
    TrajectoryPair,
    TrajectoryStep,
)

__all__ = ["align_calls", "same_json", "trajectory_of"]


def same_json(a: Any, b: Any) -> bool:
    """Equal as typed JSON values (see ``typed_key``)."""
    return typed_key(a) == typed_key(b)


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

    def calls(side: Sequence[TrajectoryCall]) -> list[ToolCall]:
        return [ToolCall(name=c.name or "?", arguments=c.arguments) for c in side]

    out: list[TrajectoryPair] = []
    i = j = 0
    for e, a, _accuracy in [*align_ordered(calls(expected), calls(actual)), (None, None, 0.0)]:
        stop_e = len(expected) if e is None else e
        stop_a = len(actual) if a is None else a
        out += [TrajectoryPair(status="missing", expected=c) for c in expected[i:stop_e]]
        out += [TrajectoryPair(status="extra", actual=c) for c in actual[j:stop_a]]
        if e is not None and a is not None:
            out.append(_pair(expected[e], actual[a]))
            i, j = e + 1, a + 1
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
