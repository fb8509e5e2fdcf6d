"""The one form of agent rows: messages, tool calls and tools as named tuples, and what is
read off them (the calls made, the first question, the final answer, plain dicts).

They are named tuples because a dataset of agent rows holds one per message and call, and a
tuple is cheap to make. Treat them, their arguments and schemas as read-only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple

__all__ = [
    "CALL_TYPES",
    "FIELD_LEVEL",
    "MESSAGE_LEVEL",
    "AgentFormatError",
    "CallType",
    "Message",
    "Role",
    "Tool",
    "ToolCall",
    "dump_item",
    "final_answer",
    "first_user_text",
    "make",
    "plain_items",
    "tool_calls_of",
]

Role = Literal["system", "user", "assistant", "tool"]
#: what kind of tool a call calls: a function (the default) or a tool of an MCP server
#: (DeepEval's ``ToolCall.type``, FUNCTION or MCP)
CallType = Literal["function", "mcp"]
CALL_TYPES: tuple[CallType, ...] = ("function", "mcp")
#: the nesting level of a row's field value (the row object is level 1), and of a message
FIELD_LEVEL = 2
MESSAGE_LEVEL = FIELD_LEVEL + 1
_NO_ARGUMENTS: dict[str, Any] = {}  # the shared default: never written to


class AgentFormatError(ValueError):
    """An agent field's item is malformed: ``path`` says where inside the field.
    ``over_limit`` is true when the item is well formed but exceeds a row limit (nesting)."""

    def __init__(self, path: str, message: str, over_limit: bool = False) -> None:
        self.path = path
        self.message = message
        self.over_limit = over_limit
        super().__init__(f"{path}: {message}" if path else message)


class ToolCall(NamedTuple):
    """One call of a tool: its name and arguments (a JSON value, usually an object), the id
    its result refers to, and the kind of tool called (``function`` or ``mcp``)."""

    name: str
    arguments: Any = _NO_ARGUMENTS
    id: str | None = None
    type: CallType = "function"


class Message(NamedTuple):
    """One message of a conversation. An assistant message may call tools; a tool message
    is the result of the call ``tool_call_id`` (of tool ``name``)."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


class Tool(NamedTuple):
    """A tool on offer: name, description and the JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = _NO_ARGUMENTS


#: a named tuple made from all its fields at once, skipping its Python ``__new__``
make = tuple.__new__


def dump_item(item: Message | ToolCall | Tool) -> dict[str, Any]:
    """One item as a plain dict, what is at its default left out. Arguments that are a JSON
    string are written as JSON text (a string is read as JSON text), so they read back."""
    out = {}
    defaults = item._field_defaults
    for field, value in zip(item._fields, item, strict=True):
        if field not in defaults or value != defaults[field]:
            if field == "tool_calls":
                value = [dump_item(c) for c in value]
            elif field == "arguments" and isinstance(value, str):
                value = json.dumps(value, ensure_ascii=False)
            out[field] = value
    return out


def plain_items(items: Iterable[Message | ToolCall | Tool]) -> list[dict[str, Any]]:
    """Messages, calls or tools as plain dicts, what is at its default left out: how rows
    are written and stored (and read back by ``datasets.agent``'s readers)."""
    return [dump_item(item) for item in items]


def tool_calls_of(messages: Iterable[Message]) -> list[ToolCall]:
    """Every tool call the assistant made, in order."""
    return [call for m in messages if m.tool_calls for call in m.tool_calls]


def first_user_text(messages: Iterable[Message]) -> str | None:
    """The first user message's text (a conversation's query), None without one."""
    return next((m.content for m in messages if m.role == "user" and m.content.strip()), None)


def final_answer(messages: Sequence[Message]) -> str | None:
    """The last assistant message's text, None when the assistant never answered in text."""
    return next(
        (m.content for m in reversed(messages) if m.role == "assistant" and m.content.strip()),
        None,
    )
