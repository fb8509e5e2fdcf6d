"""Agent rows in one form: a conversation of messages (system, user, assistant, tool), the
assistant's tool calls with their arguments as JSON values, each tool result tied to the call
it answers; the expected calls; the tools on offer.

One reader per format, message by message, each fast for the usual message and wording every
error:

- OpenAI's chat messages: ``tool_calls`` of ``{id, type, function: {name, arguments}}`` with
  JSON-text arguments, results by ``tool_call_id``; the older ``function_call`` and
  ``function`` role;
- Anthropic's content blocks: ``tool_use`` / ``tool_result`` (and their ``mcp_`` forms);
- RAGAS's message dicts: ``type`` human / ai / tool, ``tool_calls`` of ``{name, args}``,
  results without ids (tied to the oldest call not yet answered);
- DeepEval's turns: ``role`` and ``tools_called`` of ``{name, type, input_parameters,
  output}``, each output a tool result.

A malformed item raises ``AgentFormatError`` with its path inside the field
(``[3].tool_calls[0].function.arguments``), which the row check names with row and field. The
readers hold what they keep to the row's limits (``datasets._agent_calls``); the items are
named tuples (``datasets._agent_items``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.datasets._agent_calls import (
    Where,
    checked,
    listed,
    path,
    plain,
    read_call,
    read_tool_calls,
    read_tools,
    rest_within,
    shown,
    text_of,
    value_within,
    within,
)
from ragmeter.datasets._agent_items import (
    CALL_TYPES,
    MESSAGE_LEVEL,
    AgentFormatError,
    CallType,
    Message,
    Role,
    Tool,
    ToolCall,
    final_answer,
    first_user_text,
    make,
    plain_items,
    tool_calls_of,
)
from ragmeter.datasets._values import MAX_DEPTH

__all__ = [
    "AGENT_FIELDS",
    "CALL_TYPES",
    "AgentFormatError",
    "CallType",
    "Message",
    "Role",
    "Tool",
    "ToolCall",
    "final_answer",
    "first_user_text",
    "plain_items",
    "read_messages",
    "read_tool_calls",
    "read_tools",
    "tool_calls_of",
    "turns_from_tools_called",
]

#: the row fields this module reads
AGENT_FIELDS = ("messages", "reference_tool_calls", "reference_topics", "available_tools")
_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
}
_CALLS_AT = MESSAGE_LEVEL + 2  # a call's level: message, its list of calls, the call
_USES = ("tool_use", "mcp_tool_use")
_RESULTS = ("tool_result", "mcp_tool_result")
_BLOCKS = (*_USES, *_RESULTS)
#: the keys of a message each format reads, by the key its role is under; any other value
#: is held to the limits
_TEXT_KEYS = {"role": frozenset({"role", "content"}), "type": frozenset({"type", "content"})}
_ASSISTANT_KEYS = {
    key: keys | {"tool_calls", "tools_called", "function_call"} for key, keys in _TEXT_KEYS.items()
}
_RESULT_KEYS = {key: keys | {"tool_call_id"} for key, keys in _TEXT_KEYS.items()}


def read_messages(value: Any, max_depth: int = MAX_DEPTH) -> tuple[Message, ...]:
    """A conversation in any of the formats, in one form; AgentFormatError naming the item.
    ``max_depth`` is the row's nesting limit (the row object is level 1)."""
    return checked(_conversation, listed(value, "messages"), max_depth)


def turns_from_tools_called(
    query: str, calls: Any, response: str | None, max_depth: int = MAX_DEPTH
) -> tuple[Message, ...]:
    """DeepEval's single-turn case (input, ``tools_called``, actual output) as messages."""
    turn: dict[str, Any] = {"role": "assistant", "content": "", "tools_called": calls}
    messages: list[Any] = [{"role": "user", "content": query}, turn]
    if response:
        messages.append({"role": "assistant", "content": response})
    # the calls sit two levels deeper in these messages than in the row they came from
    return read_messages(messages, max_depth + 2)


class _Reader:
    """Messages read one by one, each tool result tied to its call: by id, else (RAGAS,
    DeepEval) to the oldest call not yet answered."""

    __slots__ = ("calls", "max_depth", "messages", "waiting")

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.messages: list[Message] = []
        self.calls: dict[str, ToolCall] = {}
        self.waiting: dict[str, None] = {}  # ids of the calls without a result, oldest first

    def assistant(self, content: str, calls: Sequence[ToolCall]) -> None:
        """An assistant message; its calls all have ids (``read_call`` numbers the rest)."""
        for call in calls:
            self.calls[call.id or ""] = call
            self.waiting[call.id or ""] = None
        self.messages.append(make(Message, ("assistant", content, tuple(calls), None, None)))

    def result(self, content: str, call_id: Any, at: Where) -> None:
        if call_id is not None:
            key = call_id if type(call_id) is str else str(call_id)
            found = self.calls.get(key)
            if found is None:
                raise AgentFormatError(
                    path(at),
                    f"a tool result with no call: no earlier tool call has id {shown(call_id)}",
                )
            self.waiting.pop(key, None)
        elif self.waiting:
            key = next(iter(self.waiting))
            del self.waiting[key]
            found = self.calls[key]
        else:
            raise AgentFormatError(
                path(at), "a tool result with no call: no tool call before it waits for one"
            )
        self.messages.append(make(Message, ("tool", content, (), found.id, found.name)))

    def plain(self, role: Role, content: str) -> None:
        self.messages.append(make(Message, (role, content, (), None, None)))


def _conversation(items: list[Any], max_depth: int) -> tuple[Message, ...]:
    reader = _Reader(max_depth)
    for index, item in enumerate(items):
        _message(reader, item, index)
    return tuple(reader.messages)


def _message(reader: _Reader, raw: Any, index: int) -> None:
    """One message, read by its format: Anthropic's when its content holds tool blocks,
    DeepEval's when it has ``tools_called``, else OpenAI's (RAGAS's name the role ``type``)."""
    if type(raw) is not dict:
        raw = plain(raw)
        if not isinstance(raw, Mapping):
            raise AgentFormatError(
                f"[{index}]", f"expected a message object, got {type(raw).__name__}"
            )
    role_key = "role" if "role" in raw else "type"
    given = raw.get(role_key)
    role = _ROLES.get(given) if isinstance(given, str) else None
    if role is None:
        raise AgentFormatError(
            f"[{index}].role",
            f"unknown role {shown(given)} (expected system, user, assistant or tool)",
        )
    content = raw.get("content")
    if type(content) is str:
        text = content
    elif isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") in _BLOCKS for b in content
    ):
        _anthropic(reader, raw, role, content, index, role_key)
        return
    else:
        if content is not None:
            value_within(content, reader.max_depth - MESSAGE_LEVEL, reader.max_depth)
        text = text_of(content, f"[{index}].content")
    if role == "assistant":
        _assistant(reader, raw, text, index, role_key)
    elif role == "tool":
        _result(reader, raw, text, index, role_key)
    else:
        if not raw.keys() <= _TEXT_KEYS[role_key]:
            rest_within(raw, _TEXT_KEYS[role_key], MESSAGE_LEVEL, reader.max_depth)
        reader.plain(role, text)


def _assistant(
    reader: _Reader, raw: Mapping[str, Any], text: str, index: int, role_key: str
) -> None:
    """An assistant message with its calls: OpenAI's ``tool_calls`` (RAGAS's too) and
    ``function_call``, DeepEval's ``tools_called`` (whose outputs are tool results)."""
    keys, max_depth = _ASSISTANT_KEYS[role_key], reader.max_depth
    if not raw.keys() <= keys:
        rest_within(raw, keys, MESSAGE_LEVEL, max_depth)
    found: list[ToolCall] = []
    start = len(reader.calls)
    for key in ("tool_calls", "tools_called"):
        items = raw.get(key)
        if items is not None:
            if not isinstance(items, list):
                raise AgentFormatError(f"[{index}].{key}", "expected a list of tool calls")
            for k, item in enumerate(items):
                found.append(
                    read_call(item, (index, key, k), _CALLS_AT, max_depth, start + len(found))
                )
    legacy = raw.get("function_call")
    if isinstance(legacy, Mapping):
        at: Where = (index, "function_call")
        found.append(read_call(legacy, at, _CALLS_AT - 1, max_depth, start + len(found)))
    elif legacy is not None:
        value_within(legacy, max_depth - MESSAGE_LEVEL, max_depth)
    reader.assistant(text, found)
    if "tools_called" in raw:
        for call, output in _outputs(raw, found, max_depth, index):
            reader.result(output, call.id, (index,))


def _result(reader: _Reader, raw: Mapping[str, Any], text: str, index: int, role_key: str) -> None:
    """A tool result: OpenAI's (``tool_call_id``), the older ``function`` role's and
    RAGAS's (no id: the oldest call not yet answered)."""
    keys = _RESULT_KEYS[role_key]
    if "tool_call_id" in raw:
        call_id = raw["tool_call_id"]
    else:
        call_id = raw.get("tool_use_id")
        keys = keys | {"tool_use_id"}
    if not raw.keys() <= keys:
        rest_within(raw, keys, MESSAGE_LEVEL, reader.max_depth)
    if call_id is not None and type(call_id) is not str:
        value_within(call_id, reader.max_depth - MESSAGE_LEVEL, reader.max_depth)
    reader.result(text, call_id, (index,))


def _outputs(
    raw: Mapping[str, Any], calls: list[ToolCall], max_depth: int, index: int
) -> list[tuple[ToolCall, str]]:
    """DeepEval's ``tools_called`` carry their output: each becomes a tool result."""
    items = raw.get("tools_called")
    if not isinstance(items, list):
        return []
    start = len(calls) - len(items)
    out = []
    room = max_depth - (MESSAGE_LEVEL + 2)  # message, tools_called, call: the output's level
    for k, (call, item) in enumerate(zip(calls[start:], items, strict=True)):
        output = _plain_item(item).get("output") if isinstance(_plain_item(item), Mapping) else None
        if output is None:
            continue
        if isinstance(output, str):
            out.append((call, output))
        else:
            within(output, room, max_depth, (index, "tools_called", k, "output"))
            out.append((call, json.dumps(output, ensure_ascii=False)))
    return out


def _plain_item(item: Any) -> Any:
    return item if type(item) is dict else plain(item)


def _anthropic(
    reader: _Reader,
    raw: Mapping[str, Any],
    role: Role,
    blocks: list[Any],
    index: int,
    role_key: str,
) -> None:
    """Anthropic's content blocks: text, ``tool_use`` (calls), ``tool_result`` (results)."""
    max_depth = reader.max_depth
    if not raw.keys() <= _TEXT_KEYS[role_key]:
        rest_within(raw, _TEXT_KEYS[role_key], MESSAGE_LEVEL, max_depth)
    value_within(blocks, max_depth - MESSAGE_LEVEL, max_depth)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for j, block in enumerate(blocks):
        where = (index, "content", j)
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind in _USES:
            calls.append(read_call(block, where, _CALLS_AT, max_depth))
        elif kind in _RESULTS:
            text = text_of(block.get("content"), path((*where, "content")))
            reader.result(text, block.get("tool_use_id"), where)
        else:
            texts.append(text_of([block], f"[{index}].content"))
    if role == "assistant" and (texts or calls):
        reader.assistant("\n".join(texts), _numbered(calls, len(reader.calls)))
    elif texts:
        reader.plain(role, "\n".join(texts))


def _numbered(calls: list[ToolCall], start: int) -> list[ToolCall]:
    """Anthropic's calls in one message, ids given by position where a block had none."""
    return [
        c if c.id is not None else c._replace(id=f"call_{start + i}") for i, c in enumerate(calls)
    ]
