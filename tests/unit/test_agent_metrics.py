"""Deterministic agent metrics: hand-worked examples from each formula, the rows' path
(OpenAI and Anthropic conversations through ``evaluate``), errors naming the missing field,
and Hypothesis invariants (scores in [0, 1], identical trajectories score 1, the unordered
modes unchanged by a permutation)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragmeter
from ragmeter.datasets.agent import ToolCall, tool_calls_of
from ragmeter.metrics import create_metric
from ragmeter.metrics.agent import (
    argument_accuracy,
    deepeval_tool_correctness,
    ragas_tool_call_accuracy,
)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def score(spec: str, actual: list[ToolCall], expected: list[ToolCall]) -> float | None:
    return create_metric(spec).sync_compute(actual, expected).score


PARIS, ROME = call("weather", city="Paris"), call("weather", city="Rome", days=2)
BOOK = call("book", city="Rome", nights=2)

# -- hand-worked examples --------------------------------------------------------------------


def test_argument_accuracy_is_shared_names_over_all_names() -> None:
    assert argument_accuracy({"a": 1, "b": [1, {"x": 2}]}, {"b": [1.0, {"x": 2}], "a": 1.0}) == 1
    # names {a, b, c}: a equal, b differs, c only actual -> 1/3
    assert argument_accuracy({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 0}) == pytest.approx(1 / 3)
    assert argument_accuracy({}, {}) == 1.0
    assert argument_accuracy({"flag": True}, {"flag": 1}) == 0.0  # typed: true is not 1
    assert argument_accuracy({"n": "1"}, {"n": 1}) == 0.0


def test_tool_call_accuracy_gives_partial_credit() -> None:
    # one extra call: S = 2 over max(2, 3)
    assert score("tool_call_accuracy", [PARIS, BOOK, ROME], [PARIS, ROME]) == pytest.approx(2 / 3)
    # one missing call: S = 1 over max(2, 1)
    assert score("tool_call_accuracy", [PARIS], [PARIS, ROME]) == 0.5
    # a wrong argument: city right, days missing -> 1/2 for that pair; S = 1.5 over 2
    half = call("weather", city="Rome")
    assert score("tool_call_accuracy", [PARIS, half], [PARIS, ROME]) == 0.75
    # swapped order: in order only one pair aligns (S = 1); unordered both do
    assert score("tool_call_accuracy", [BOOK, PARIS], [PARIS, BOOK]) == 0.5
    assert score("tool_call_accuracy(strict_order=false)", [BOOK, PARIS], [PARIS, BOOK]) == 1.0
    assert score("tool_call_accuracy", [], []) == 1.0
    assert score("tool_call_accuracy", [], [PARIS]) == 0.0


def test_ragas_mode_scores_zero_on_any_count_difference() -> None:
    assert ragas_tool_call_accuracy([PARIS, BOOK, ROME], [PARIS, ROME]) == 0.0
    assert ragas_tool_call_accuracy([PARIS, ROME], [PARIS, ROME]) == 1.0
    # RAGAS compares values as text: 1.0 is not 1; extra actual arguments are ignored
    assert ragas_tool_call_accuracy([call("f", n=1.0, x=0)], [call("f", n=1)]) == 0.0
    assert ragas_tool_call_accuracy([call("f", n=1, x=0)], [call("f", n=1, m=2)]) == 0.5
    assert ragas_tool_call_accuracy([BOOK, PARIS], [PARIS, BOOK]) == 0.0
    assert ragas_tool_call_accuracy([BOOK, PARIS], [PARIS, BOOK], strict_order=False) == 1.0


def test_f1_precision_recall() -> None:
    actual, expected = [PARIS, BOOK, call("weather", city="Rome", days=2.0)], [PARIS, ROME]
    assert score("tool_call_f1", actual, expected) == pytest.approx(0.8)
    assert score("tool_call_precision", actual, expected) == pytest.approx(2 / 3)
    assert score("tool_call_recall", actual, expected) == 1.0
    feedback = create_metric("tool_call_f1").sync_compute(actual, expected).feedback
    assert feedback == "precision 0.6667, recall 1"
    # a call made twice counts once (as in RAGAS); both empty is a perfect 1 (RAGAS: 0)
    assert score("tool_call_f1", [PARIS, PARIS], [PARIS]) == 1.0
    assert score("tool_call_f1", [], []) == 1.0
    assert score("tool_call_f1", [call("f", flag=True)], [call("f", flag=1)]) == 0.0


def test_trajectory_modes() -> None:
    expected = [PARIS, ROME]
    cases = {
        "strict": ([PARIS, ROME], [ROME, PARIS]),
        "unordered": ([ROME, PARIS], [PARIS]),
        "subset": ([PARIS], [PARIS, BOOK]),
        "superset": ([PARIS, BOOK, ROME], [PARIS, BOOK]),
    }
    for mode, (good, bad) in cases.items():
        assert score(f"trajectory_match(mode={mode})", good, expected) == 1.0, mode
        assert score(f"trajectory_match(mode={mode})", bad, expected) == 0.0, mode
    wrong_city = [call("weather", city="Oslo"), ROME]
    assert score("trajectory_match", wrong_city, expected) == 0.0
    assert score("trajectory_match(arguments=false)", wrong_city, expected) == 1.0


def test_argument_accuracy_metric_and_its_null() -> None:
    half = call("weather", city="Rome")
    assert score("argument_accuracy", [half, PARIS, BOOK], [PARIS, ROME]) == 0.75
    result = create_metric("argument_accuracy").sync_compute([BOOK], [PARIS])
    assert result.score is None and "no call of an expected tool" in (result.feedback or "")


def test_tool_correctness_modes_as_deepeval() -> None:
    expected = [PARIS, BOOK]
    # default: extra calls cost nothing, order does not matter
    assert deepeval_tool_correctness([BOOK, ROME, PARIS], expected) == 1.0
    assert deepeval_tool_correctness([BOOK], expected) == 0.5
    # exact match: same tools, same order
    assert deepeval_tool_correctness([BOOK, PARIS], expected, should_exact_match=True) == 0.0
    # ordering: weighted LCS of [weather, book] in [book, weather] is 1 -> 1/2
    assert deepeval_tool_correctness([BOOK, PARIS], expected, should_consider_ordering=True) == 0.5
    # parameters: {city, days} vs {city}: city equal -> 1/2
    assert deepeval_tool_correctness(
        [call("weather", city="Rome")], [ROME], input_parameters=True
    ) == pytest.approx(0.5)
    # nested objects count by their own overlap: {a: {x, y}} half equal -> 1/2 of 1 name
    nested = deepeval_tool_correctness(
        [call("f", a={"x": 1, "y": 2})], [call("f", a={"x": 1, "y": 3})], input_parameters=True
    )
    assert nested == pytest.approx(0.5)
    assert deepeval_tool_correctness([], []) == 1.0
    assert deepeval_tool_correctness([PARIS], []) == 0.0


def test_tool_correctness_matches_only_calls_of_the_same_type() -> None:
    """DeepEval's ``type``: an MCP tool is not the function of the same name, in every mode;
    the feedback says which tools were called as another type."""
    mcp = PARIS._replace(type="mcp")
    for options in ({}, {"should_exact_match": True}, {"should_consider_ordering": True}):
        assert deepeval_tool_correctness([mcp], [PARIS], **options) == 0.0, options
        assert deepeval_tool_correctness([mcp], [mcp], **options) == 1.0, options
    assert deepeval_tool_correctness([mcp, PARIS], [PARIS]) == 1.0
    assert deepeval_tool_correctness([PARIS, mcp], [PARIS, PARIS]) == 0.5
    result = create_metric("tool_correctness").sync_compute([mcp, BOOK], [PARIS, BOOK])
    assert result.score == 0.5
    assert result.feedback == "called as another type: weather (function expected)"


def test_dbgpt_intent_and_app_link() -> None:
    intent = create_metric("IntentMetric")
    assert intent.sync_compute('{"intent": "buy"}', ["buy", "sell"]).score == 1.0
    assert intent.sync_compute('{"intent": "rent"}', ["buy"]).score == 0.0
    bad = intent.sync_compute("buy", ["buy"])
    assert bad.score == 0.0 and "not JSON" in (bad.feedback or "")
    empty = intent.sync_compute("", ["buy"])
    assert empty.score == 0.0 and empty.passing is False
    app = create_metric("AppLinkMetric")
    assert app.sync_compute('{"app_name": "crm"}', ["crm"]).score == 1.0
    assert app.sync_compute('{"intent": "crm"}', ["crm"]).score == 0.0


# -- rows through evaluate -------------------------------------------------------------------

OPENAI_ROW: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function",
             "function": {"name": "weather", "arguments": '{"days": 2.0, "city": "Rome"}'}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        {"role": "tool", "tool_call_id": "c2", "content": "21C"},
        {"role": "assistant", "content": "Paris 18C, Rome 21C."},
    ],
    "reference_tool_calls": [
        {"name": "weather", "arguments": {"city": "Paris"}},
        {"name": "weather", "arguments": {"city": "Rome", "days": 2}},
    ],
}  # fmt: skip

ANTHROPIC_ROW: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "t2", "name": "book", "input": {"city": "Paris"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "18C"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "booked"},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "18C."}]},
    ],
    "reference_tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}],
}  # fmt: skip

METRICS = [
    "tool_call_accuracy",
    "tool_call_accuracy(mode=ragas)",
    "tool_call_f1",
    "tool_call_precision",
    "tool_call_recall",
    "argument_accuracy",
    "trajectory_match(mode=superset)",
    "tool_correctness",
]


def test_openai_and_anthropic_rows_evaluate() -> None:
    report = ragmeter.evaluate([OPENAI_ROW, ANTHROPIC_ROW], METRICS)
    got = {name: report.scores(name) for name in METRICS}
    assert got["tool_call_accuracy"] == [1.0, 0.5]
    # RAGAS compares values as text: "2.0" is not "2" (1.5 / 2); one extra call -> 0
    assert got["tool_call_accuracy(mode=ragas)"] == [0.75, 0.0]
    assert got["tool_call_f1"] == [1.0, pytest.approx(2 / 3)]
    assert got["tool_call_precision"] == [1.0, 0.5]
    assert got["tool_call_recall"] == [1.0, 1.0]
    assert got["trajectory_match(mode=superset)"] == [1.0, 1.0]
    assert got["tool_correctness"] == [1.0, 1.0]


def test_a_row_lacking_a_field_stops_before_any_work_naming_it() -> None:
    plain = {"query": "What is RAG?", "response": "Retrieval-augmented generation."}
    no_reference = {"messages": OPENAI_ROW["messages"]}
    for rows, where in (
        ([OPENAI_ROW, plain], r"row 1\) field 'messages'"),
        ([OPENAI_ROW, no_reference], r"row 1\) field 'reference_tool_calls'"),
    ):
        with pytest.raises(ragmeter.errors.DatasetError, match=where):
            ragmeter.evaluate(rows, ["tool_call_f1"])
    with pytest.raises(ragmeter.errors.DatasetError, match=r"row 0\) field 'retrieved_contexts"):
        ragmeter.evaluate([plain], ["IntentMetric"])
    with pytest.raises(ragmeter.errors.DatasetError, match=r"row 0\) field 'response'"):
        ragmeter.evaluate([{"query": "q", "retrieved_contexts": ["a"]}], ["AppLinkMetric"])


def test_bad_parameters_are_refused() -> None:
    for spec in (
        "tool_call_accuracy(mode=deepeval)",
        "trajectory_match(mode=prefix)",
        "tool_correctness(input_parameters=yes)",
    ):
        with pytest.raises(ragmeter.errors.MetricError, match="must be"):
            create_metric(spec)


# -- invariants ------------------------------------------------------------------------------

NAMES = st.sampled_from(["search", "weather", "book", "mail"])
SCALARS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, 1.0, 2.0, -1.5]),
    st.sampled_from(["a", "b", "Paris"]),
    st.booleans(),
    st.none(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=6,
)
CALLS = st.builds(
    lambda name, args: ToolCall(name=name, arguments=args),
    NAMES,
    st.dictionaries(st.sampled_from(["q", "n", "when", "to"]), VALUES, max_size=3),
)
TRAJECTORIES = st.lists(CALLS, max_size=6)

ALL_SPECS = [
    "tool_call_accuracy",
    "tool_call_accuracy(strict_order=false)",
    "tool_call_accuracy(mode=ragas)",
    "tool_call_accuracy(mode=ragas,strict_order=false)",
    "tool_call_f1",
    "tool_call_precision",
    "tool_call_recall",
    "argument_accuracy",
    "argument_accuracy(strict_order=true)",
    *(f"trajectory_match(mode={m})" for m in ("strict", "unordered", "subset", "superset")),
    "tool_correctness",
    "tool_correctness(input_parameters=true)",
    "tool_correctness(should_exact_match=true,input_parameters=true)",
    "tool_correctness(should_consider_ordering=true,input_parameters=true)",
]
UNORDERED_SPECS = [
    "tool_call_accuracy(strict_order=false)",
    "tool_call_f1",
    "tool_call_precision",
    "tool_call_recall",
    "argument_accuracy",
    "trajectory_match(mode=unordered)",
    "trajectory_match(mode=subset)",
    "trajectory_match(mode=superset)",
]
METRIC_OBJECTS = {spec: create_metric(spec) for spec in ALL_SPECS}


def _scores(actual: list[ToolCall], expected: list[ToolCall]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for spec, metric in METRIC_OBJECTS.items():
        got = metric.sync_compute(actual, expected)
        out[spec] = got.score
        assert got.score is not None or got.feedback, spec  # a null always says why
    return out


@settings(max_examples=300, deadline=None)
@given(TRAJECTORIES, TRAJECTORIES)
def test_scores_are_in_unit_interval(actual: list[ToolCall], expected: list[ToolCall]) -> None:
    for spec, value in _scores(actual, expected).items():
        assert value is None or (0.0 <= value <= 1.0 and math.isfinite(value)), spec


@settings(max_examples=200, deadline=None)
@given(TRAJECTORIES)
def test_identical_trajectories_score_one(calls: list[ToolCall]) -> None:
    for spec, value in _scores(calls, list(calls)).items():
        if spec.startswith("argument_accuracy") and not calls:
            assert value is None  # nothing to compare
        else:
            assert value == 1.0, spec


@settings(max_examples=300, deadline=None)
@given(TRAJECTORIES, TRAJECTORIES, st.randoms(use_true_random=False))
def test_unordered_modes_ignore_order(
    actual: list[ToolCall], expected: list[ToolCall], rng: Any
) -> None:
    before = _scores(actual, expected)
    shuffled_actual, shuffled_expected = list(actual), list(expected)
    rng.shuffle(shuffled_actual)
    rng.shuffle(shuffled_expected)
    after = _scores(shuffled_actual, shuffled_expected)
    for spec in UNORDERED_SPECS:
        if before[spec] is None:
            assert after[spec] is None, spec
        else:
            assert after[spec] == pytest.approx(before[spec], abs=1e-12), spec


@settings(max_examples=200, deadline=None)
@given(TRAJECTORIES, TRAJECTORIES)
def test_partial_credit_bounds(actual: list[ToolCall], expected: list[ToolCall]) -> None:
    """ragmeter's accuracy is at most the share of calls that could align by name."""
    ours = score("tool_call_accuracy", actual, expected)
    assert ours is not None
    if actual and expected:
        same_names = sum(
            min(sum(c.name == n for c in actual), sum(c.name == n for c in expected))
            for n in {c.name for c in expected}
        )
        assert ours <= same_names / max(len(actual), len(expected)) + 1e-12


def test_specs_with_several_parameters_split_as_one_text() -> None:
    """A comma inside a spec's parentheses belongs to the spec (the command line's and the
    API's comma-separated metric lists)."""
    from ragmeter._specs import split_specs

    text = "tool_correctness(should_exact_match=true,input_parameters=true), tool_call_f1,,"
    assert split_specs(text) == [
        "tool_correctness(should_exact_match=true,input_parameters=true)",
        "tool_call_f1",
    ]
    report = ragmeter.evaluate([OPENAI_ROW], text)
    assert report.scores("tool_correctness(should_exact_match=true,input_parameters=true)") == [1.0]


def test_random_trajectories_are_seeded_rows_in_openai_format() -> None:
    from ragmeter.datasets import load_dataset
    from ragmeter.testing.trajectories import random_trajectories

    rows = random_trajectories(300, seed=5)
    assert rows == random_trajectories(300, seed=5)
    assert rows != random_trajectories(300, seed=6)
    dataset = load_dataset(rows)  # every row reads: the generator writes valid conversations
    assert len(dataset) == 300
    calls = [c for m in dataset.column("messages") for c in tool_calls_of(m)]
    kinds = {
        type(v).__name__
        for c in calls
        if isinstance(c.arguments, dict)
        for v in c.arguments.values()
    }
    assert {"int", "float", "str", "list", "dict", "bool"} <= kinds
    assert any(not isinstance(c.arguments, dict) for c in calls)  # the peers' crash cases


def _best_ordered(expected: list[ToolCall], actual: list[ToolCall]) -> float:
    """The largest total argument accuracy of non-crossing same-name pairs, by trying every
    choice (small inputs only)."""
    if not expected or not actual:
        return 0.0
    head, rest = expected[0], expected[1:]
    best = _best_ordered(rest, actual)  # the first expected call left unpaired
    for j, call in enumerate(actual):
        if call.name == head.name:
            paired = argument_accuracy(head.arguments, call.arguments)
            best = max(best, paired + _best_ordered(rest, actual[j + 1 :]))
    return best


@settings(max_examples=300, deadline=None)
@given(st.lists(CALLS, max_size=5), st.lists(CALLS, max_size=5))
def test_ordered_alignment_is_the_best(actual: list[ToolCall], expected: list[ToolCall]) -> None:
    from ragmeter.metrics.agent._calls import align_ordered

    pairs = align_ordered(expected, actual)
    assert [i for i, _, _ in pairs] == sorted({i for i, _, _ in pairs})  # each once, in order
    assert [j for _, j, _ in pairs] == sorted({j for _, j, _ in pairs})
    assert all(expected[i].name == actual[j].name for i, j, _ in pairs)
    assert sum(w for _, _, w in pairs) == pytest.approx(_best_ordered(expected, actual))
