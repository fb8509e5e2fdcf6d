"""Agent rows in one form: a conversation of messages (system, user, assistant, tool), the
assistant's tool calls with their arguments as JSON values, each tool result tied to the call
it answers; the expected calls; the tools on offer.

Read from the formats agents already speak: OpenAI's chat messages (``tool_calls`` with
``function.name`` and JSON-string ``arguments``, results by ``tool_call_id``; the older
``function_call``), Anthropic's content blocks (``tool_use`` / ``tool_result``), RAGAS's
message dicts (``type`` human / ai / tool, ``tool_calls`` of ``name`` and ``args``) and
DeepEval's turns and tool calls (``tools_called`` of ``name``, ``input_parameters``,
``output``). A malformed item raises ``AgentFormatError`` with its path inside the field
(``[3].tool_calls[0].function.arguments``), which the row check names with row and field.

The readers also hold the values they keep (arguments, schemas, outputs) to the row's limits:
nesting at most ``max_depth`` levels counted from the row, and no integer too long to write.

The usual rows (OpenAI's messages, expected calls as objects) take a faster path first
(``datasets._agent_fast``); the items are named tuples (``datasets._agent_items``).
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.datasets._agent_fast import decode_json, openai_messages, plain_calls
from ragmeter.datasets._agent_items import (
    FIELD_LEVEL,
    MESSAGE_LEVEL,
    AgentFormatError,
    Message,
    Role,
    Tool,
    ToolCall,
    dump_item,
    final_answer,
    first_user_text,
    make,
    plain_items,
    tool_calls_of,
)
from ragmeter.datasets._values import MAX_DEPTH, MAX_INT_DIGITS, too_deep_or_long

__all__ = [
    "AGENT_FIELDS",
    "AgentFormatError",
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
#: keys a tool call's arguments may come under (ours and OpenAI's, RAGAS's, Anthropic's,
#: DeepEval's)
_ARGUMENT_KEYS = ("arguments", "args", "input", "input_parameters")
#: where an item sits inside its field, as parts: ``(3, "tool_calls", 0)`` is
#: ``[3].tool_calls[0]`` (made into text only for an error)
Where = tuple[str | int, ...]


def _path(where: Where) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where)


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = _SHOWN.maxlong = 60


def _shown(value: Any) -> str:
    """A value as an error message quotes it: its repr, cut short."""
    return _SHOWN.repr(value)


def _plain(value: Any) -> Any:
    """Our own items and another library's message objects (pydantic models) as dicts;
    others as given."""
    if isinstance(value, Message | ToolCall | Tool):
        return dump_item(value)
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) and not isinstance(value, type) else value


def _listed(value: Any, what: str) -> list[Any]:
    """``value`` as a list: a list, or a JSON text of one (a CSV cell)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise AgentFormatError(
                "", f"expected a list of {what}, got text that is not JSON ({exc})"
            ) from None
        except RecursionError:
            raise AgentFormatError("", "nested too deeply to read", over_limit=True) from None
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise AgentFormatError("", f"expected a list of {what}, got {type(value).__name__}")
    return value


def _text(value: Any, path: str) -> str:
    """Message content as text: a string, None, or a list of text parts / blocks."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for i, part in enumerate(value):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif not (isinstance(part, Mapping) and part.get("type") in ("image", "image_url")):
                raise AgentFormatError(f"{path}[{i}]", "expected a text part")
        return "\n".join(parts)
    raise AgentFormatError(path, f"expected text, got {type(value).__name__}")


def _within(value: Any, room: int, max_depth: int, at: Where) -> None:
    """AgentFormatError unless ``value`` nests at most ``room`` levels (the row's
    ``max_depth`` less where it sits) and holds no integer too long to write down."""
    deep, digits = too_deep_or_long(value, room)
    if deep:
        raise AgentFormatError(_path(at), f"nested deeper than {max_depth} levels", over_limit=True)
    if digits is not None:
        raise AgentFormatError(
            _path(at),
            f"holds an integer of about {digits:,} digits; numbers in a row have at most "
            f"{MAX_INT_DIGITS:,}",
        )


def _arguments(value: Any, room: int, max_depth: int, at: Where) -> Any:
    """A call's arguments as a JSON value: OpenAI's JSON text parsed, a dict kept."""
    if type(value) is str:
        if not value or value.isspace():
            return {}
        try:
            parsed = decode_json(value)
        except ValueError as exc:
            raise AgentFormatError(_path(at), f"arguments are not valid JSON ({exc})") from None
        except RecursionError:
            raise AgentFormatError(
                _path(at), f"nested deeper than {max_depth} levels", over_limit=True
            ) from None
        # a short text cannot nest deeper than it has brackets, nor hold a long integer
        if len(value) > MAX_INT_DIGITS or value.count("{") + value.count("[") > room:
            _within(parsed, room, max_depth, at)
        return parsed
    if value is None:
        return {}
    if isinstance(value, str):  # a subclass of str: as text
        return _arguments(str(value), room, max_depth, at)
    _within(value, room, max_depth, at)
    return value


def _call(raw: Any, at: Where, level: int, max_depth: int, number: int | None = None) -> ToolCall:
    """One tool call (at ``at``, on nesting level ``level``) in any of the shapes: ``{name,
    arguments}`` (or ``args``, ``input``, ``input_parameters``), OpenAI's ``{id, function:
    {name, arguments}}``, Anthropic's ``{type: tool_use, id, name, input}``. A call without an
    id gets ``call_<number>`` when a number is given."""
    if type(raw) is not dict:
        raw = _plain(raw)
        if not isinstance(raw, Mapping):
            raise AgentFormatError(
                _path(at), f"expected a tool call object, got {type(raw).__name__}"
            )
    body = raw.get("function")
    if type(body) is dict or isinstance(body, Mapping):
        at, level = (*at, "function"), level + 1
    else:
        body = raw
    name = body.get("name")
    if type(name) is not str or not name:
        if not isinstance(name, str) or not name:
            raise AgentFormatError(_path((*at, "name")), "a tool call needs a name")
        name = str(name)
    if "arguments" in body:
        key = "arguments"
    else:
        key = next((k for k in _ARGUMENT_KEYS if k in body), "arguments")
    arguments = _arguments(body.get(key), max_depth - level, max_depth, (*at, key))
    call_id = raw.get("id")
    if call_id is None:
        call_id = None if number is None else f"call_{number}"
    elif type(call_id) is not str:
        call_id = str(call_id)
    return make(ToolCall, (name, arguments, call_id))


def read_tool_calls(value: Any, max_depth: int = MAX_DEPTH) -> tuple[ToolCall, ...]:
    """Expected tool calls (``reference_tool_calls``, DeepEval's ``expected_tools``), in
    order."""
    items = _listed(value, "tool calls")
    fast = plain_calls(items, max_depth)
    return fast if fast is not None else calls_of(items, max_depth)


def calls_of(items: list[Any], max_depth: int) -> tuple[ToolCall, ...]:
    """The general reader of expected calls: every shape, every error worded."""
    _within(items, max_depth - 1, max_depth, ())
    level = FIELD_LEVEL + 1
    return tuple(_call(item, (i,), level, max_depth) for i, item in enumerate(items))


def read_tools(value: Any, max_depth: int = MAX_DEPTH) -> tuple[Tool, ...]:
    """Tools on offer: OpenAI's ``{type: function, function: {name, description,
    parameters}}``, Anthropic's ``{name, description, input_schema}`` or ``{name,
    description, parameters}``."""
    out = []
    items = _listed(value, "tools")
    _within(items, max_depth - 1, max_depth, ())
    for i, item in enumerate(items):
        item = _plain(item)
        if not isinstance(item, Mapping):
            raise AgentFormatError(f"[{i}]", f"expected a tool object, got {type(item).__name__}")
        level = FIELD_LEVEL + 1
        body = item
        if isinstance(item.get("function"), Mapping):
            body, level = item["function"], level + 1
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise AgentFormatError(f"[{i}].name", "a tool needs a name")
        key = "parameters" if "parameters" in body else "input_schema"
        schema = body.get(key) or {}
        if not isinstance(schema, Mapping):
            raise AgentFormatError(f"[{i}].parameters", "expected a JSON schema object")
        schema = dict(schema)
        _within(schema, max_depth - level, max_depth, (i, key))
        description = body.get("description") or ""
        out.append(Tool(name=str(name), description=str(description), parameters=schema))
    return tuple(out)


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
        """An assistant message; its calls all have ids (``_call`` numbers the rest)."""
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
                    _path(at),
                    f"a tool result with no call: no earlier tool call has id {_shown(call_id)}",
                )
            self.waiting.pop(key, None)
        elif self.waiting:
            key = next(iter(self.waiting))
            del self.waiting[key]
            found = self.calls[key]
        else:
            raise AgentFormatError(
                _path(at), "a tool result with no call: no tool call before it waits for one"
            )
        self.messages.append(make(Message, ("tool", content, (), found.id, found.name)))

    def plain(self, role: Role, content: str) -> None:
        self.messages.append(make(Message, (role, content, (), None, None)))


def _blocks(reader: _Reader, role: Role, blocks: list[Any], index: int) -> None:
    """Anthropic's content blocks: text, ``tool_use`` (calls), ``tool_result`` (results)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    level = MESSAGE_LEVEL + 2  # message, content list, block
    for j, block in enumerate(blocks):
        where = (index, "content", j)
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_use":
            calls.append(_call(block, where, level, reader.max_depth))
        elif kind == "tool_result":
            text = _text(block.get("content"), _path((*where, "content")))
            reader.result(text, block.get("tool_use_id"), where)
        else:
            texts.append(_text([block], f"[{index}].content"))
    if role == "assistant" and (texts or calls):
        reader.assistant("\n".join(texts), _numbered(calls, len(reader.calls)))
    elif texts:
        reader.plain(role, "\n".join(texts))


def _numbered(calls: list[ToolCall], start: int) -> list[ToolCall]:
    """Anthropic's calls in one message, ids given by position where a block had none."""
    return [
        c if c.id is not None else c._replace(id=f"call_{start + i}") for i, c in enumerate(calls)
    ]


def _message(reader: _Reader, raw: Any, index: int) -> None:
    if type(raw) is not dict:
        raw = _plain(raw)
        if not isinstance(raw, Mapping):
            raise AgentFormatError(
                f"[{index}]", f"expected a message object, got {type(raw).__name__}"
            )
    given = raw.get("role", raw.get("type"))
    role = _ROLES.get(given) if isinstance(given, str) else None
    if role is None:
        raise AgentFormatError(
            f"[{index}].role",
            f"unknown role {_shown(given)} (expected system, user, assistant or tool)",
        )
    content = raw.get("content")
    if type(content) is str:
        text = content
    elif isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
    ):
        _blocks(reader, role, content, index)
        return
    else:
        text = _text(content, f"[{index}].content")
    if role == "assistant":
        calls = _assistant_calls(reader, raw, index)
        reader.assistant(text, calls)
        if "tools_called" in raw:
            for call, output in _outputs(raw, calls, reader.max_depth, index):
                reader.result(output, call.id, (index,))
    elif role == "tool":
        call_id = raw.get("tool_call_id", raw.get("tool_use_id"))
        reader.result(text, call_id, (index,))
    else:
        reader.messages.append(make(Message, (role, text, (), None, None)))


def _assistant_calls(reader: _Reader, raw: Mapping[str, Any], index: int) -> list[ToolCall]:
    found: list[ToolCall] = []
    start, level, max_depth = len(reader.calls), MESSAGE_LEVEL + 2, reader.max_depth
    for key in ("tool_calls", "tools_called"):
        items = raw.get(key)
        if items is not None:
            if not isinstance(items, list):
                raise AgentFormatError(f"[{index}].{key}", "expected a list of tool calls")
            for k, item in enumerate(items):
                found.append(_call(item, (index, key, k), level, max_depth, start + len(found)))
    if isinstance(raw.get("function_call"), Mapping):
        at = (index, "function_call")
        found.append(_call(raw["function_call"], at, level - 1, max_depth, start + len(found)))
    return found


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
        output = _plain(item).get("output") if isinstance(_plain(item), Mapping) else None
        if output is None:
            continue
        if isinstance(output, str):
            out.append((call, output))
        else:
            _within(output, room, max_depth, (index, "tools_called", k, "output"))
            out.append((call, json.dumps(output, ensure_ascii=False)))
    return out


def read_messages(value: Any, max_depth: int = MAX_DEPTH) -> tuple[Message, ...]:
    """A conversation in any of the formats, in one form; AgentFormatError naming the item.
    ``max_depth`` is the row's nesting limit (the row object is level 1)."""
    items = _listed(value, "messages")
    fast = openai_messages(items, max_depth)
    return fast if fast is not None else messages_of(items, max_depth)


def messages_of(items: list[Any], max_depth: int) -> tuple[Message, ...]:
    """The general reader of a conversation's items: every format, every error worded."""
    _within(items, max_depth - 1, max_depth, ())  # the field's value is on the row's level 2
    reader = _Reader(max_depth)
    for index, item in enumerate(items):
        _message(reader, item, index)
    return tuple(reader.messages)


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
