"""Rows held as columns: the column check accepts and refuses exactly what the per-row check
does (same rows, same errors), and reading a file still names its first problem."""

from __future__ import annotations

import gc
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
    _agent_fast,
    agent,
    load_dataset,
    row_from_mapping,
)
from ragmeter.datasets.agent import AgentFormatError
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


# -- agent rows: the conversation readers' fast paths against the general one ---------------

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
    """The conversation readers' fast paths (and their column pass) accept and refuse what
    the general reader does, row by row, with the same errors and the same messages."""
    _agrees(raws, depth)


def _general(read: Any, items: list[Any], depth: int) -> Any:
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
def test_the_fast_readers_agree_with_the_general_ones(
    messages: list[Any], calls: list[Any], depth: int
) -> None:
    """Where a fast reader reads a value, the general reader reads the same; where the
    general reader refuses one, the fast reader leaves it to it."""
    general = _general(agent.messages_of, messages, depth)
    for read in (_agent_fast.openai_messages, _agent_fast.openai_messages_python):
        fast = read(messages, depth)
        assert fast is None or fast == general
    general = _general(agent.calls_of, calls, depth)
    for read in (_agent_fast.plain_calls, _agent_fast.plain_calls_python):
        fast = read(calls, depth)
        assert fast is None or fast == general
    compiled, python = (
        _agent_fast.openai_messages(messages, depth),
        _agent_fast.openai_messages_python(messages, depth),
    )
    assert compiled == python  # the compiled reader takes what the Python one takes
    assert _agent_fast.plain_calls(calls, depth) in (
        None,
        _agent_fast.plain_calls_python(calls, depth),
    )


@pytest.mark.parametrize("text", _ARGUMENT_TEXTS)
@pytest.mark.parametrize("depth", [6, 8, 64])
def test_every_kind_of_arguments_text_reads_alike_both_ways(text: str, depth: int) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": text}}
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]}]
    general = _general(agent.messages_of, messages, depth)
    for read in (_agent_fast.openai_messages, _agent_fast.openai_messages_python):
        fast = read(messages, depth)
        assert fast is None or fast == general


def test_the_compiled_reader_is_built() -> None:
    assert _agent_fast.openai_messages is not _agent_fast.openai_messages_python, (
        "ragmeter.datasets._agent_read was not built: the install needs a C compiler (gcc)"
    )


def test_the_fast_readers_take_the_usual_rows() -> None:
    """OpenAI's conversations and expected calls as objects (the benchmark's rows) all go
    the fast way, and read as the general readers read them."""
    for row in random_trajectories(500, seed=3):
        messages, expected = row["messages"], row["reference_tool_calls"]
        for read in (_agent_fast.openai_messages, _agent_fast.openai_messages_python):
            fast = read(messages, 64)
            assert fast is not None and fast == agent.messages_of(messages, 64)
        for read in (_agent_fast.plain_calls, _agent_fast.plain_calls_python):
            calls = read(expected, 64)
            assert calls is not None and calls == agent.calls_of(expected, 64)


def test_read_items_are_out_of_the_collectors_sight_only_when_all_their_parts_are() -> None:
    """An item the compiled reader leaves untracked holds nothing the cycle collector
    tracks (else a cycle through it could never be collected)."""
    seen = untracked = 0
    for row in random_trajectories(300, seed=5):
        conversation = _agent_fast.openai_messages(row["messages"], 64)
        calls = _agent_fast.plain_calls(row["reference_tool_calls"], 64)
        assert conversation is not None and calls is not None
        stack: list[Any] = [conversation, calls]
        while stack:
            item = stack.pop()
            if isinstance(item, tuple):
                seen += 1
                if not gc.is_tracked(item):
                    untracked += 1
                    assert not any(gc.is_tracked(part) for part in item)
                stack.extend(item)
    assert untracked > seen / 2  # most are: strings, numbers and flat arguments
