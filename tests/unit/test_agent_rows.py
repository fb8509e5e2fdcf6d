"""Agent rows: one conversation read from OpenAI's, Anthropic's, RAGAS's and DeepEval's
formats into the same messages; bad items named by row, field and path; rows written back
and read again unchanged; files (JSONL, CSV cells holding JSON) load with line numbers."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from ragmeter.datasets.agent import final_answer, tool_calls_of
from ragmeter.datasets.loader import load_dataset
from ragmeter.datasets.row import TooLongNumber, row_from_mapping
from ragmeter.errors import DatasetError

OPENAI: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "You answer about the weather."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
                {"id": "c2", "type": "function",
                 "function": {"name": "weather", "arguments": '{"city": "Rome", "days": 2}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "21C"},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        {"role": "assistant", "content": [{"type": "text", "text": "Paris 18C, Rome 21C."}]},
    ],
    "reference_tool_calls": [
        {"name": "weather", "arguments": {"city": "Paris"}},
        {"name": "weather", "arguments": {"city": "Rome", "days": 2}},
    ],
    "available_tools": [
        {"type": "function", "function": {"name": "weather", "description": "Forecast",
                                          "parameters": {"type": "object"}}},
    ],
}  # fmt: skip

ANTHROPIC: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "c2", "name": "weather",
                 "input": {"city": "Rome", "days": 2}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c2", "content": "21C"},
                {"type": "tool_result", "tool_use_id": "c1",
                 "content": [{"type": "text", "text": "18C"}]},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Paris 18C, Rome 21C."}]},
    ],
    "tools": [{"name": "weather", "description": "Forecast", "input_schema": {"type": "object"}}],
}  # fmt: skip


def _shape(row: Any) -> list[tuple[Any, ...]]:
    """What the metrics see of a conversation (system prompts aside)."""
    return [
        (m.role, m.content, [(c.name, c.arguments) for c in m.tool_calls], m.name)
        for m in row.messages
        if m.role != "system"
    ]


def test_openai_and_anthropic_conversations_read_the_same() -> None:
    openai, anthropic = row_from_mapping(OPENAI, 0), row_from_mapping(ANTHROPIC, 1)
    assert openai.query == anthropic.query == "Weather in Paris and Rome?"
    assert _shape(openai) == _shape(anthropic)
    calls = tool_calls_of(openai.messages)
    assert [(c.name, c.arguments) for c in calls] == [
        ("weather", {"city": "Paris"}),
        ("weather", {"city": "Rome", "days": 2}),
    ]
    results = {m.tool_call_id: m.content for m in openai.messages if m.role == "tool"}
    assert results == {"c1": "18C", "c2": "21C"}
    assert final_answer(openai.messages) == "Paris 18C, Rome 21C."
    assert openai.available_tools == anthropic.available_tools
    assert (
        openai.available_tools is not None and openai.available_tools[0].description == "Forecast"
    )


def test_ragas_and_deepeval_shapes_read_into_the_same_form() -> None:
    ragas = row_from_mapping(
        {
            "user_input": [
                {"type": "human", "content": "Weather in Paris?"},
                {"type": "ai", "content": "", "tool_calls": [{"name": "weather",
                                                             "args": {"city": "Paris"}}]},
                {"type": "tool", "content": "18C"},
                {"type": "ai", "content": "18C."},
            ],
            "reference_tool_calls": [{"name": "weather", "args": {"city": "Paris"}}],
            "reference_topics": ["weather"],
        },
        0,
    )  # fmt: skip
    deepeval = row_from_mapping(
        {
            "input": "Weather in Paris?",
            "actual_output": "18C.",
            "tools_called": [
                {"name": "weather", "input_parameters": {"city": "Paris"}, "output": "18C"}
            ],
            "expected_tools": [{"name": "weather", "input_parameters": {"city": "Paris"}}],
        },
        1,
    )
    assert _shape(ragas) == _shape(deepeval)
    assert ragas.messages is not None and ragas.messages[2].name == "weather"
    assert ragas.reference_tool_calls == deepeval.reference_tool_calls
    assert ragas.reference_topics == ["weather"] and deepeval.response == "18C."


def test_peer_samples_are_read_as_the_peers_write_them() -> None:
    """RAGAS's samples of AI messages only (no question: an empty query), a question beside
    RAGAS's list ``user_input``, its id-based samples; DeepEval's camel-case JSON with MCP
    calls; Anthropic's MCP blocks."""
    calls = [{"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": {"x": 1}}]}]
    alone = row_from_mapping({"user_input": calls, "reference_tool_calls": []}, 0)
    assert alone.query == "" and alone.messages is not None and len(alone.messages) == 1
    asked = row_from_mapping({"user_input": calls, "query": "Why?"}, 1)
    assert asked.query == "Why?" and asked.messages == alone.messages
    ids = row_from_mapping({"retrieved_context_ids": [1, "b"], "reference_context_ids": ["b"]}, 2)
    assert (ids.query, ids.retrieved_ids, ids.reference_ids) == ("", ["1", "b"], ["b"])
    deepeval = row_from_mapping(
        {
            "input": "Repo?",
            "actualOutput": "It uses pytest.",
            "toolsCalled": [{"name": "ask", "type": "MCP", "inputParameters": {"repo": "r"}}],
            "expectedTools": [{"name": "ask", "inputParameters": {"repo": "r"}}],
        },
        3,
    )
    assert deepeval.messages is not None and deepeval.reference_tool_calls is not None
    (called,) = tool_calls_of(deepeval.messages)
    assert (called.name, called.arguments, called.type) == ("ask", {"repo": "r"}, "mcp")
    assert deepeval.reference_tool_calls[0].type == "function"
    assert deepeval.response == "It uses pytest."
    blocks = [{"type": "mcp_tool_use", "id": "m1", "name": "echo", "input": {"t": "hi"}}]
    results = [{"type": "mcp_tool_result", "tool_use_id": "m1", "content": "hi"}]
    anthropic = row_from_mapping(
        {"messages": [{"role": "user", "content": "Echo hi"},
                      {"role": "assistant", "content": blocks},
                      {"role": "user", "content": results}]},
        4,
    )  # fmt: skip
    assert anthropic.messages is not None
    assert [(c.name, c.type) for c in tool_calls_of(anthropic.messages)] == [("echo", "mcp")]
    assert anthropic.messages[2].role == "tool" and anthropic.messages[2].content == "hi"
    written = json.loads(json.dumps(anthropic.to_raw()))
    assert written["messages"][1]["tool_calls"][0]["type"] == "mcp"
    assert row_from_mapping(written, 4) == anthropic


@pytest.mark.parametrize(
    ("row", "field", "says"),
    [
        (
            {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
                {"id": "1", "function": {"name": "f", "arguments": "{city: Paris}"}}]}]},
            "messages[1].tool_calls[0].function.arguments",
            "arguments are not valid JSON",
        ),
        (
            {"messages": [{"role": "user", "content": "x"},
                          {"role": "tool", "tool_call_id": "c9", "content": "18C"}]},
            "messages[1]",
            "a tool result with no call",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}, {"type": "tool", "content": "18C"}]},
            "messages[1]",
            "a tool result with no call",
        ),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "unknown role"),
        ({"query": "q", "reference_tool_calls": [{"name": "f", "type": "web"}]},
         "reference_tool_calls[0].type", "unknown tool call type 'web'"),
        ({"query": "", "reference": "r"}, "query", "expected a non-empty string"),
        ({"user_input": [{"type": "ai", "content": "x"}], "messages": []}, "messages",
         "given twice with different values, as 'user_input' and 'messages'"),
        ({"messages": "not json"}, "messages", "not JSON"),
        ({"query": "q", "reference_tool_calls": [{"arguments": {}}]},
         "reference_tool_calls[0].name", "needs a name"),
        ({"query": "q", "available_tools": [{"name": "f", "parameters": "x"}]},
         "available_tools[0].parameters", "JSON schema"),
        ({"query": "q", "reference_topics": "weather"}, "reference_topics", "a list of strings"),
    ],
)  # fmt: skip
def test_a_bad_agent_row_names_row_field_and_item(
    row: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(DatasetError) as info:
        row_from_mapping(row, 4, source="agents.jsonl", line=5)
    assert info.value.field == field and info.value.row == 4 and info.value.line == 5
    assert says in str(info.value) and "agents.jsonl line 5" in str(info.value)


def test_a_row_written_back_reads_the_same() -> None:
    for given in (OPENAI, ANTHROPIC):
        row = row_from_mapping(given, 0)
        raw = json.loads(json.dumps(row.to_raw()))
        assert "tool_calls" not in raw["messages"][0]  # defaults are left out
        assert row_from_mapping(raw, 0) == row


def test_agent_files_load_with_lines_and_csv_cells_of_json(tmp_path: Path) -> None:
    jsonl = tmp_path / "agents.jsonl"
    bad = {"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}]}
    jsonl.write_text("\n".join(json.dumps(r) for r in (OPENAI, ANTHROPIC, bad)) + "\n")
    with pytest.raises(DatasetError, match=r"agents.jsonl line 3 \(row 2\) field 'messages\[1\]'"):
        load_dataset(jsonl)
    jsonl.write_text("\n".join(json.dumps(r) for r in (OPENAI, ANTHROPIC)) + "\n")
    dataset = load_dataset(jsonl)
    assert [_shape(r) for r in dataset] == [_shape(row_from_mapping(OPENAI, 0))] * 2
    assert dataset.raw(0)["messages"][2]["tool_calls"][0]["name"] == "weather"
    table = tmp_path / "agents.csv"
    with table.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["messages", "reference_tool_calls"])
        writer.writeheader()
        writer.writerow({k: json.dumps(OPENAI[k]) for k in ("messages", "reference_tool_calls")})
    (row,) = load_dataset(table)
    assert _shape(row) == _shape(row_from_mapping(OPENAI, 0))
    assert row.reference_tool_calls == row_from_mapping(OPENAI, 0).reference_tool_calls


DEEP = "[" * 900 + "1" + "]" * 900
LONG = "9" * 5000
INSIDE = "[" * 70 + "]" * 70


@pytest.mark.parametrize(
    ("line", "field", "says"),
    [
        ('{"messages": [{"role": "user", "content": "q", "x": DEEP}]}',
         "messages", "nested deeper than 64 levels"),
        ('{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": '
         '[{"id": LONG, "function": {"name": "f", "arguments": "{}"}}]}]}',
         "messages", "holds an integer of about 5,000 digits"),
        ('{"query": "q", "available_tools": [{"name": "f", "description": DEEP}]}',
         "available_tools", "nested deeper than 64 levels"),
        ('{"query": "q", "reference_tool_calls": [{"name": "f", "arguments": {}, "x": DEEP}]}',
         "reference_tool_calls", "nested deeper than 64 levels"),
        ('{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": '
         '[{"id": "c1", "function": {"name": "f", "arguments": "INSIDE"}}]}]}',
         "messages[1].tool_calls[0].function.arguments", "nested deeper than 64 levels"),
    ],
)  # fmt: skip
def test_every_part_of_an_agent_field_is_held_to_the_row_limits(
    tmp_path: Path, line: str, field: str, says: str
) -> None:
    """Whichever reader takes a conversation, nothing in it nests deeper than a row may or
    holds an integer too long to write down: a file (read as columns) and a row alone are
    refused alike, naming the field."""
    line = line.replace("DEEP", DEEP).replace("LONG", LONG).replace("INSIDE", INSIDE)
    path = tmp_path / "rows.jsonl"
    path.write_text('{"query": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert (info.value.row, info.value.line, info.value.field) == (1, 2, field)
    assert says in str(info.value)
    with pytest.raises(DatasetError, match=says.replace("(", r"\(")):
        row_from_mapping(json.loads(line, parse_int=_number), 1)


def _number(text: str) -> int | TooLongNumber:
    """A JSON integer as the file reader takes it (one too long to convert kept as such)."""
    return TooLongNumber(len(text)) if len(text) > 4000 else int(text)


class _Clearing:
    """A message object (as another library's models are) whose ``model_dump`` empties the
    conversation that holds it."""

    def __init__(self, conversation: list[Any], message: dict[str, Any]) -> None:
        self.conversation, self.message = conversation, message

    def model_dump(self) -> dict[str, Any]:
        self.conversation.clear()
        return self.message


def test_a_message_that_changes_its_conversation_while_read_cannot_corrupt_it() -> None:
    """The reader reads the conversation as it was given: an item whose own code empties the
    list (or the row's expected calls) changes neither what is read nor how much."""
    conversation: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    conversation.append(_Clearing(conversation, {"role": "assistant", "tool_calls": [call]}))
    conversation.append({"role": "tool", "tool_call_id": "c1", "content": "18C"})
    expected: list[Any] = []
    expected.append(_Clearing(expected, {"name": "weather", "arguments": {}}))
    row = row_from_mapping({"messages": conversation, "reference_tool_calls": expected}, 0)
    assert conversation == [] and expected == []  # the items did meddle
    assert row.messages is not None and [m.role for m in row.messages] == [
        "user",
        "assistant",
        "tool",
    ]
    assert row.reference_tool_calls is not None
    assert [c.name for c in row.reference_tool_calls] == ["weather"]
