"""The Row view's trajectory: calls compared as JSON values, expected and made calls aligned
in order (every call appears once, on its side), and a stored row read into steps."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ragmeter.runs.views.trajectory import align_calls, same_json, trajectory_of
from ragmeter.wire.trajectory import TrajectoryCall


def _calls(*specs: tuple[str, Any]) -> list[TrajectoryCall]:
    return [TrajectoryCall(name=name, arguments=args) for name, args in specs]


def test_json_equality() -> None:
    assert same_json({"a": 1, "b": [1, {"c": 2.0}]}, {"b": [1.0, {"c": 2}], "a": 1.0})
    assert not same_json({"a": True}, {"a": 1})  # a boolean is not a number
    assert not same_json([1, 2], [2, 1]) and not same_json({"a": 1}, {"a": 1, "b": None})


def test_alignment_by_name_in_order_preferring_equal_arguments() -> None:
    expected = _calls(("search", {"q": "a"}), ("weather", {"city": "Rome"}), ("book", {}))
    made = _calls(("weather", {"city": "Paris"}), ("weather", {"city": "Rome"}), ("pay", {}))
    pairs = align_calls(expected, made)
    assert [p.status for p in pairs] == ["missing", "extra", "match", "missing", "extra"]
    assert pairs[2].expected == expected[1] and pairs[2].actual == made[1]


def test_argument_diff_names_the_keys_that_differ() -> None:
    (pair,) = align_calls(
        _calls(("weather", {"city": "Rome", "days": 2})),
        _calls(("weather", {"days": 3, "city": "Rome", "unit": "C"})),
    )
    assert pair.status == "arguments"
    assert [(a.key, a.expected, a.actual, a.equal) for a in pair.arguments] == [
        ("city", "Rome", "Rome", True),
        ("days", 2, 3, False),
        ("unit", None, "C", False),
    ]


names = st.lists(st.sampled_from(["a", "b", "c"]), max_size=6)


@given(names, names)
def test_every_call_appears_once_on_its_side_in_order(left: list[str], right: list[str]) -> None:
    expected = _calls(*((n, {}) for n in left))
    made = _calls(*((n, {}) for n in right))
    pairs = align_calls(expected, made)
    assert [p.expected.name for p in pairs if p.expected] == left
    assert [p.actual.name for p in pairs if p.actual] == right
    matched = sum(p.status == "match" for p in pairs)
    # as many pairs as the longest common subsequence of the names
    lcs = [[0] * (len(right) + 1) for _ in range(len(left) + 1)]
    for i, x in enumerate(left):
        for j, y in enumerate(right):
            lcs[i + 1][j + 1] = lcs[i][j] + 1 if x == y else max(lcs[i][j + 1], lcs[i + 1][j])
    assert matched == lcs[-1][-1]


def test_a_stored_row_reads_into_steps_with_each_calls_result() -> None:
    raw = {
        "query": "q",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"name": "f", "arguments": {"x": 1}, "id": "1"},
                {"name": "g", "arguments": {}, "id": "2"},
            ]},
            {"role": "tool", "content": "one", "tool_call_id": "1"},
        ],
        "reference_tool_calls": [{"name": "f", "arguments": {"x": 1.0}}],
    }  # fmt: skip
    trajectory = trajectory_of(raw)
    assert trajectory is not None
    assert [s.role for s in trajectory.steps] == ["user", "assistant", "tool"]
    assert [(c.name, c.result) for c in trajectory.steps[1].calls] == [("f", "one"), ("g", None)]
    assert [p.status for p in trajectory.pairs] == ["match", "extra"]
    assert trajectory_of({"query": "q"}) is None
