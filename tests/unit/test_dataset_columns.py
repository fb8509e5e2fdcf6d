"""Rows held as columns: the column check accepts and refuses exactly what the per-row check
does (same rows, same errors), and reading a file still names its first problem."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import DatasetError, evaluate
from ragmeter.datasets import (
    Dataset,
    DatasetLimits,
    Row,
    agent,
    load_dataset,
    row_from_mapping,
)
from ragmeter.datasets.agent import AgentFormatError, plain_items
from ragmeter.errors import LimitError
from ragmeter.testing.trajectories import random_trajectories

KEYS = [
    "query", "question", "user_input", "reference", "ground_truth", "response", "answer",
    "contexts", "retrieved_contexts", "factual", "reference_contexts", "retrieved_ids",
    "reference_ids", "doc_name", "metadata", "team", "extra",
]  # fmt: skip

_leaf = st.one_of(
    st.text(max_size=3),
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    st.just(10**1001),
)
_nested = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=6,
)
_value = st.one_of(
    st.text(max_size=4),
    st.just(""),
    st.none(),
    st.just(math.nan),
    st.integers(-3, 3),
    st.lists(st.text(max_size=3), max_size=3),
    st.lists(st.one_of(st.text(max_size=2), st.integers(0, 9)), max_size=3),
    st.tuples(st.text(max_size=2)),
    st.dictionaries(st.one_of(st.text(max_size=2), st.integers(0, 3)), _nested, max_size=2),
    _nested,
)
_row = st.dictionaries(st.sampled_from(KEYS), _value, max_size=5).map(
    lambda d: {"query": "q", **d} if "question" not in d and "user_input" not in d else d
)


def _per_row(raws: list[Any], limits: DatasetLimits) -> list[Row]:
    setting = limits.setting("max_json_depth")
    return [
        row_from_mapping(raw, i, source="<rows>", max_depth=limits.max_depth, depth_setting=setting)
        for i, raw in enumerate(raws)
    ]


def _outcome(load: Any) -> Any:
    try:
        return ("rows", load())
    except DatasetError as exc:
        return ("error", str(exc), exc.row, exc.field)


_odd = st.sampled_from([{"query": "q", 1: "x"}, ["query"], "q", {"query": "q", "answer": None}])


@settings(max_examples=400, deadline=None)
@given(
    raws=st.lists(
        st.one_of(_row, _row, _odd, st.just({"query": "fine", "retrieved_ids": ["a"]})),
        max_size=6,
    ),
    depth=st.sampled_from([3, 4, 64]),
)
def test_the_column_check_agrees_with_the_per_row_check(raws: list[Any], depth: int) -> None:
    _agrees(raws, depth)


def _agrees(raws: list[Any], depth: int) -> None:
    """Loading ``raws`` as columns gives what the per-row check gives: the same rows, or the
    same error."""
    limits = DatasetLimits(max_depth=depth)
    expected = _outcome(lambda: _per_row(raws, limits))
    got = _outcome(lambda: load_dataset(raws, limits=limits))
    if expected[0] == "error":
        assert got == expected
        return
    assert got[0] == "rows"
    rows, dataset = expected[1], got[1]
    assert [r.model_dump() for r in dataset] == [r.model_dump() for r in rows]
    assert [dataset.raw(i) for i in range(len(rows))] == [r.to_raw() for r in rows]
    assert [r.to_raw() for r in dataset] == [r.to_raw() for r in rows]


def test_columns_hold_every_field_and_rows_are_made_on_demand() -> None:
    dataset = load_dataset(
        [
            {"question": "a", "retrieved_ids": [1, "2"], "reference_ids": ["2"], "team": "x"},
            {"query": "b", "metadata": {"k": [1]}},
        ]
    )
    assert dataset.column("query") == ["a", "b"]
    assert dataset.column("retrieved_ids") == [["1", "2"], None]  # the per-row check's ints
    assert dataset.column("response") == [None, None]
    assert dataset.lacking("reference_ids").tolist() == [False, True]
    assert dataset.column("extra") == [{"team": "x"}, None]
    assert dataset[1].metadata == {"k": [1]} and dataset[-1].query == "b"
    assert dataset.raw(0) == {
        "query": "a",
        "retrieved_ids": ["1", "2"],
        "reference_ids": ["2"],
        "team": "x",
    }
    with pytest.raises(IndexError):
        dataset[2]
    assert [r.query for r in Dataset(list(dataset))] == ["a", "b"]


def test_a_file_names_its_first_problem_though_rows_are_checked_after_reading(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rows.jsonl"
    lines = ['{"query": "a"}', '{"query": ""}', '{"query": "c"}', '{"query": ']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    assert (caught.value.row, caught.value.line, caught.value.field) == (1, 2, "query")
    path.write_text("\n".join([lines[0], lines[3]]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="line 2: invalid JSON"):
        load_dataset(path)
    many = [json.dumps({"query": f"q{i}"}) for i in range(6)]
    many[2] = json.dumps({"query": "q", "contexts": "not a list"})
    path.write_text("\n".join(many) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset(path, limits=DatasetLimits(max_rows=4))
    assert (caught.value.row, caught.value.field) == (2, "retrieved_contexts")
    rows = [{"query": f"q{i}"} for i in range(6)]
    with pytest.raises(LimitError, match="more than 4 rows"):
        load_dataset(iter(rows), limits=DatasetLimits(max_rows=4))


def test_evaluate_reads_columns_and_agrees_with_the_per_row_path() -> None:
    """The columns' batch path and a user subclass scored row by row give the same results."""
    from ragmeter.metrics import RetrieverMRRMetric

    class PerRowMRR(RetrieverMRRMetric):
        def sync_compute(self, prediction: Any, contexts: Any = None, query: Any = None) -> Any:
            return super().sync_compute(prediction, contexts, query)

    rows = [
        {"query": "a", "contexts": ["x", "y", "z"], "factual": ["y"]},
        {"query": "b", "contexts": ["x"], "factual": []},
        {"query": "c", "contexts": [], "factual": ["x"]},
        {"query": "d", "contexts": ["p", "x", "x"], "factual": ["x", "q"]},
    ]
    batch = evaluate(rows, [RetrieverMRRMetric(top_k=2)])
    per_row = evaluate(rows, [PerRowMRR(top_k=2)])
    expected = [0.5, None, 0.0, 0.5]
    assert batch.scores("RetrieverMRRMetric") == per_row.scores("PerRowMRR") == expected
    for a, b in zip(batch, per_row, strict=True):
        assert (a.score, a.error, a.error_kind, a.prediction, a.contexts, a.raw_dataset) == (
            b.score,
            b.error,
            b.error_kind,
            b.prediction,
            b.contexts,
            b.raw_dataset,
        )


def test_unknown_fields_are_kept_per_row_in_order_however_many_names() -> None:
    rows: list[dict[str, Any]] = [{"query": f"q{i}", f"field_{i}": i} for i in range(2000)]
    rows.append({"zeta": 1, "query": "last", "alpha": {"k": [1]}})
    dataset = load_dataset(rows)
    assert dataset[7].extra == {"field_7": 7}
    assert list(dataset[-1].extra) == ["zeta", "alpha"]
    assert dataset.raw(2000) == {"query": "last", "zeta": 1, "alpha": {"k": [1]}}
    assert list(dataset.each_raw()) == list(dataset.raws())  # column by column, the same
    agents = load_dataset(
        [{"query": "q", "messages": [{"role": "user", "content": "hi"}]}, {"query": "p"}]
    )
    assert list(agents.each_raw()) == list(agents.raws())


# -- agent rows: the conversation reader, as columns and alone ---------------------------------
_ARGUMENT_TEXTS = (
    ['{"city": "Paris"}', "{}", "", "  ", "{bad", "[1, 2.0]", '"x"', "NaN", ' {"a": 1} ',
     "[" * 5 + "]" * 5, '{"a": {"b": {"c": [1]}}}', "[" * 3000 + "]" * 3000,
     '{"n": ' + "9" * 1100 + "}", '{"t": "' + "[" * 80 + '"}']
)  # fmt: skip
_arguments_text = st.sampled_from(_ARGUMENT_TEXTS)
_arguments_value = st.one_of(st.dictionaries(st.sampled_from("ab"), _nested, max_size=2), _nested)
_openai_call = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["c1", "c2", 3]),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": st.sampled_from(["f", "g", ""]), "arguments": _arguments_text}
        ),
    }
)
_plain_call = st.fixed_dictionaries(
    {"name": st.sampled_from(["f", "g"]), "arguments": _arguments_value},
    optional={"id": st.sampled_from(["c1", "c2", 7])},
)
_message = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "system", "developer", "human", "robot", 3, ["u"]]),
            "content": st.one_of(
                st.text(max_size=3), st.none(), st.just([{"type": "text", "text": "hi"}])
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "role": st.just("assistant"),
            "content": st.one_of(st.none(), st.text(max_size=3)),
            "tool_calls": st.one_of(
                st.lists(st.one_of(_openai_call, _plain_call), max_size=3),
                st.sampled_from(["", {}, None, 0]),
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "role": st.just("tool"),
            "tool_call_id": st.sampled_from(["c1", "c2", "c9", 3, None, ["c1"]]),
            "content": st.text(max_size=3),
        }
    ),
    st.just({"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f",
                                               "input": {"a": 1}}]}),
    st.just({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                          "content": "ok"}]}),
    st.just({"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}),
    st.just({"role": "user", "content": "q", "x": [[[[[[1]]]]]]}),
    st.just({"role": "user", "content": "q", "name": [["n"]]}),
    st.just({"role": "user", "content": "q", "n": 10**1001}),
    st.just({"role": "assistant", "tool_calls": [{"id": "c1", "type": [[["function"]]],
                                                  "function": {"name": "f", "arguments": "{}"}}]}),
    st.just("not a message"),
)  # fmt: skip
_agent_row = st.fixed_dictionaries(
    {"messages": st.lists(_message, max_size=5)},
    optional={
        "query": st.sampled_from(["q", ""]),
        "reference_tool_calls": st.lists(st.one_of(_plain_call, _openai_call), max_size=3),
        "available_tools": st.just([{"name": "f", "parameters": {"type": "object"}}]),
        "team": st.just("x"),
    },
)


@settings(max_examples=400, deadline=None)
@given(raws=st.lists(_agent_row, min_size=1, max_size=5), depth=st.sampled_from([6, 8, 64]))
def test_agent_rows_read_as_columns_as_one_by_one(raws: list[Any], depth: int) -> None:
    """The column pass over agent rows accepts and refuses what the per-row check does, row by
    row, with the same errors and the same messages."""
    _agrees(raws, depth)


def _read(read: Any, items: list[Any], depth: int) -> Any:
    try:
        return read(items, depth)
    except AgentFormatError:
        return None


@settings(max_examples=600, deadline=None)
@given(
    messages=st.lists(_message, max_size=6),
    calls=st.lists(st.one_of(_plain_call, _openai_call), max_size=4),
    depth=st.sampled_from([6, 8, 64]),
)
def test_what_the_readers_read_reads_back_the_same(
    messages: list[Any], calls: list[Any], depth: int
) -> None:
    """Whatever a reader takes, written as plain dicts (as rows are stored) it reads again
    into the very same items; anything else it refuses with an AgentFormatError."""
    read = _read(agent.read_messages, messages, depth)
    if read is not None:
        assert agent.read_messages(plain_items(read), depth) == read
    expected = _read(agent.read_tool_calls, calls, depth)
    if expected is not None:
        assert agent.read_tool_calls(plain_items(expected), depth) == expected


_DEEP_OBJECT = "{" + '"a": {' * 9 + "}" * 10
_DEEPEST = "[" * 58 + "]" * 58


@pytest.mark.parametrize(
    ("text", "read", "refused"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}, None),
        ("{}", {}, None),
        ("", {}, None),
        ("  ", {}, None),
        ("[1, 2.0]", [1, 2.0], None),
        ('"x"', "x", None),
        (' {"a": 1} ', {"a": 1}, None),
        ('{"t": "' + "[" * 80 + '"}', {"t": "[" * 80}, None),  # brackets inside a string
        (_DEEP_OBJECT, json.loads(_DEEP_OBJECT), None),
        (_DEEPEST, json.loads(_DEEPEST), None),
        ("[" + _DEEPEST + "]", None, "nested deeper than 64 levels"),
        ("[" * 3000 + "]" * 3000, None, "nested deeper than 64 levels"),
        ("{bad", None, "arguments are not valid JSON"),
        ('{"n": ' + "9" * 1100 + "}", None, "holds an integer of about 1,100 digits"),
    ],
)
def test_json_text_arguments_are_parsed_and_held_to_the_row_limits(
    text: str, read: Any, refused: str | None
) -> None:
    """OpenAI's JSON-text arguments, parsed; the call's function object sits on level 6 of a
    row, so its arguments may nest 58 levels more under the default limit of 64."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": text}}
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]}]
    if refused is not None:
        with pytest.raises(AgentFormatError, match=refused) as info:
            agent.read_messages(messages, 64)
        assert info.value.path == "[1].tool_calls[0].function.arguments"
    else:
        (called,) = agent.tool_calls_of(agent.read_messages(messages, 64))
        assert called.arguments == read


def test_the_usual_rows_read_as_their_json_says() -> None:
    """OpenAI's conversations and expected calls as objects (the benchmark's rows): every call
    read with its parsed arguments, every result tied to its call."""
    for row in random_trajectories(300, seed=3):
        messages = agent.read_messages(row["messages"], 64)
        made = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]), c["id"])
            for m in row["messages"]
            for c in m.get("tool_calls") or []
        ]
        assert [(c.name, c.arguments, c.id) for c in agent.tool_calls_of(messages)] == made
        for raw, message in zip(row["messages"], messages, strict=True):
            assert message.role == raw["role"] and message.content == (raw["content"] or "")
            if raw["role"] == "tool":
                assert message.tool_call_id == raw["tool_call_id"]
        expected = agent.read_tool_calls(row["reference_tool_calls"], 64)
        assert [(c.name, c.arguments) for c in expected] == [
            (c["name"], c["arguments"]) for c in row["reference_tool_calls"]
        ]


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(_row, min_size=1, max_size=5))
def test_rows_made_column_by_column_are_raw_rows_with_their_keys_in_order(
    rows: list[dict[str, Any]],
) -> None:
    many = rows * (4100 // len(rows) + 1)  # past the second batch each_raw makes at once
    try:
        dataset = load_dataset(many)
    except DatasetError:
        return  # refused rows make no dataset
    made, expected = list(dataset.each_raw()), list(dataset.raws())
    assert made == expected
    assert [list(row) for row in made] == [list(row) for row in expected]


def test_a_row_whose_extra_names_a_field_is_made_as_raw_makes_it() -> None:
    rows = [
        Row(query="a", reference="r"),
        Row(query="b", extra={"reference": "x", "k": 1}),
        Row(query="c", extra={"z": None}),
        *(Row(query=f"q{i}", reference=None if i % 2 else "r") for i in range(2500)),
    ]  # the first batch made as raw makes it, the second column by column
    dataset = Dataset(rows)
    made, expected = list(dataset.each_raw()), list(dataset.raws())
    assert made == expected and made[1] == {"query": "b", "reference": "x", "k": 1}
    assert [list(row) for row in made] == [list(row) for row in expected]
    assert made[2001] == {"query": "q1998", "reference": "r"} and made[2002] == {"query": "q1999"}


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(_row, min_size=1, max_size=8),
    start=st.integers(0, 10),
    stop=st.integers(0, 12),
)
def test_a_range_of_rows_is_the_rows_at_its_indices(
    rows: list[dict[str, Any]], start: int, stop: int
) -> None:
    try:
        dataset = load_dataset(rows)
    except DatasetError:
        return
    wanted = range(start, stop)
    if stop > len(rows) and start < stop:  # past the end: refused as a list's is
        with pytest.raises(IndexError):
            dataset.take(list(wanted))
        with pytest.raises(IndexError):
            dataset.take(wanted)
        return
    sliced, listed = dataset.take(wanted), dataset.take(list(wanted))
    assert len(sliced) == len(listed) == len(wanted)
    assert list(sliced.raws()) == list(listed.raws())
    assert sliced.lines == listed.lines
