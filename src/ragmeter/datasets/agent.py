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
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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

Role = Literal["system", "user", "assistant", "tool"]
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


class AgentFormatError(ValueError):
    """An agent field's item is malformed: ``path`` says where inside the field."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


class ToolCall(BaseModel):
    """One call of a tool: its name and arguments (a JSON value, usually an object)."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    arguments: Any = Field(default_factory=dict)
    id: str | None = None


class Message(BaseModel):
    """One message of a conversation. An assistant message may call tools; a tool message
    is the result of the call ``tool_call_id`` (of tool ``name``)."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


class Tool(BaseModel):
    """A tool on offer: name, description and the JSON schema of its arguments."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


def _plain(value: Any) -> Any:
    """A message object of another library (a pydantic model) as a dict; others as given."""
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


def _arguments(value: Any, path: str) -> Any:
    """A call's arguments as a JSON value: OpenAI's JSON text parsed, a dict kept."""
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            return json.loads(value)
        except ValueError as exc:
            raise AgentFormatError(path, f"arguments are not valid JSON ({exc})") from None
    return {} if value is None else value


def _call(raw: Any, path: str) -> ToolCall:
    """One tool call in any of the shapes: ``{name, arguments}`` (or ``args``, ``input``,
    ``input_parameters``), OpenAI's ``{id, function: {name, arguments}}``, Anthropic's
    ``{type: tool_use, id, name, input}``."""
    raw = _plain(raw)
    if not isinstance(raw, Mapping):
        raise AgentFormatError(path, f"expected a tool call object, got {type(raw).__name__}")
    body, where = raw, path
    if isinstance(raw.get("function"), Mapping):
        body, where = raw["function"], f"{path}.function"
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise AgentFormatError(f"{where}.name", "a tool call needs a name")
    key = next((k for k in _ARGUMENT_KEYS if k in body), "arguments")
    arguments = _arguments(body.get(key), f"{where}.{key}")
    call_id = raw.get("id")
    return ToolCall(name=name, arguments=arguments, id=None if call_id is None else str(call_id))


def read_tool_calls(value: Any) -> tuple[ToolCall, ...]:
    """Expected tool calls (``reference_tool_calls``, DeepEval's ``expected_tools``), in
    order."""
    return tuple(_call(item, f"[{i}]") for i, item in enumerate(_listed(value, "tool calls")))


def read_tools(value: Any) -> tuple[Tool, ...]:
    """Tools on offer: OpenAI's ``{type: function, function: {name, description,
    parameters}}``, Anthropic's ``{name, description, input_schema}`` or ``{name,
    description, parameters}``."""
    out = []
    for i, item in enumerate(_listed(value, "tools")):
        item = _plain(item)
        if not isinstance(item, Mapping):
            raise AgentFormatError(f"[{i}]", f"expected a tool object, got {type(item).__name__}")
        body = item["function"] if isinstance(item.get("function"), Mapping) else item
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise AgentFormatError(f"[{i}].name", "a tool needs a name")
        schema = body.get("parameters", body.get("input_schema")) or {}
        if not isinstance(schema, Mapping):
            raise AgentFormatError(f"[{i}].parameters", "expected a JSON schema object")
        description = body.get("description") or ""
        out.append(Tool(name=name, description=str(description), parameters=dict(schema)))
    return tuple(out)


class _Reader:
    """Messages read one by one, each tool result tied to its call: by id, else (RAGAS,
    DeepEval) to the oldest call not yet answered."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.calls: dict[str, ToolCall] = {}
        self.waiting: list[ToolCall] = []  # calls without a result yet, oldest first

    def assistant(self, content: str, calls: Sequence[ToolCall]) -> None:
        numbered = []
        for call in calls:
            if call.id is None:  # id-less formats: an id by position, so results can say
                call = call.model_copy(update={"id": f"call_{len(self.calls)}"})
            self.calls[call.id or ""] = call
            self.waiting.append(call)
            numbered.append(call)
        self.messages.append(Message(role="assistant", content=content, tool_calls=tuple(numbered)))

    def result(self, content: str, call_id: Any, path: str) -> None:
        if call_id is not None:
            call = self.calls.get(str(call_id))
            if call is None:
                raise AgentFormatError(
                    path, f"a tool result with no call: no earlier tool call has id '{call_id}'"
                )
        elif self.waiting:
            call = self.waiting[0]
        else:
            raise AgentFormatError(
                path, "a tool result with no call: no tool call before it waits for one"
            )
        if call in self.waiting:
            self.waiting.remove(call)
        self.messages.append(
            Message(role="tool", content=content, tool_call_id=call.id, name=call.name)
        )

    def plain(self, role: Role, content: str) -> None:
        self.messages.append(Message(role=role, content=content))


def _blocks(reader: _Reader, role: Role, blocks: list[Any], path: str) -> None:
    """Anthropic's content blocks: text, ``tool_use`` (calls), ``tool_result`` (results)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for j, block in enumerate(blocks):
        where = f"{path}.content[{j}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_use":
            calls.append(_call(block, where))
        elif kind == "tool_result":
            reader.result(
                _text(block.get("content"), f"{where}.content"), block.get("tool_use_id"), where
            )
        else:
            texts.append(_text([block], f"{path}.content"))
    if role == "assistant" and (texts or calls):
        reader.assistant("\n".join(texts), calls)
    elif texts:
        reader.plain(role, "\n".join(texts))


def _message(reader: _Reader, raw: Any, path: str) -> None:
    raw = _plain(raw)
    if not isinstance(raw, Mapping):
        raise AgentFormatError(path, f"expected a message object, got {type(raw).__name__}")
    given = raw.get("role", raw.get("type"))
    role = _ROLES.get(given) if isinstance(given, str) else None
    if role is None:
        raise AgentFormatError(
            f"{path}.role", f"unknown role {given!r} (expected system, user, assistant or tool)"
        )
    content = raw.get("content")
    if isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
    ):
        _blocks(reader, role, content, path)
        return
    text = _text(content, f"{path}.content")
    if role == "tool":
        call_id = raw.get("tool_call_id", raw.get("tool_use_id"))
        reader.result(text, call_id, path)
    elif role == "assistant":
        calls = _assistant_calls(reader, raw, path)
        reader.assistant(text, calls)
        for call, output in _outputs(raw, calls):
            reader.result(output, call.id, path)
    else:
        reader.plain(role, text)


def _assistant_calls(reader: _Reader, raw: Mapping[str, Any], path: str) -> list[ToolCall]:
    found = []
    for key in ("tool_calls", "tools_called"):
        if raw.get(key) is not None:
            items = raw[key]
            if not isinstance(items, list):
                raise AgentFormatError(f"{path}.{key}", "expected a list of tool calls")
            found += [_call(item, f"{path}.{key}[{k}]") for k, item in enumerate(items)]
    if isinstance(raw.get("function_call"), Mapping):
        found.append(_call(raw["function_call"], f"{path}.function_call"))
    return [
        c if c.id else c.model_copy(update={"id": f"call_{len(reader.calls) + i}"})
        for i, c in enumerate(found)
    ]


def _outputs(raw: Mapping[str, Any], calls: list[ToolCall]) -> list[tuple[ToolCall, str]]:
    """DeepEval's ``tools_called`` carry their output: each becomes a tool result."""
    items = raw.get("tools_called")
    if not isinstance(items, list):
        return []
    start = len(calls) - len(items)
    out = []
    for call, item in zip(calls[start:], items, strict=True):
        output = _plain(item).get("output") if isinstance(_plain(item), Mapping) else None
        if output is not None:
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            out.append((call, text))
    return out


def read_messages(value: Any) -> tuple[Message, ...]:
    """A conversation in any of the formats, in one form; AgentFormatError naming the item."""
    reader = _Reader()
    for i, item in enumerate(_listed(value, "messages")):
        _message(reader, item, f"[{i}]")
    return tuple(reader.messages)


def turns_from_tools_called(query: str, calls: Any, response: str | None) -> tuple[Message, ...]:
    """DeepEval's single-turn case (input, ``tools_called``, actual output) as messages."""
    turn: dict[str, Any] = {"role": "assistant", "content": "", "tools_called": calls}
    messages: list[Any] = [{"role": "user", "content": query}, turn]
    if response:
        messages.append({"role": "assistant", "content": response})
    return read_messages(messages)


def plain_items(items: Iterable[BaseModel]) -> list[dict[str, Any]]:
    """Messages, calls or tools as plain dicts, what is at its default left out: how rows
    are written and stored (and read back by the readers above)."""
    return [item.model_dump(exclude_defaults=True) for item in items]


def tool_calls_of(messages: Iterable[Message]) -> list[ToolCall]:
    """Every tool call the assistant made, in order."""
    return [call for m in messages if m.role == "assistant" for call in m.tool_calls]


def first_user_text(messages: Iterable[Message]) -> str | None:
    """The first user message's text (a conversation's query), None without one."""
    return next((m.content for m in messages if m.role == "user" and m.content.strip()), None)


def final_answer(messages: Sequence[Message]) -> str | None:
    """The last assistant message's text, None when the assistant never answered in text."""
    return next(
        (m.content for m in reversed(messages) if m.role == "assistant" and m.content.strip()),
        None,
    )
