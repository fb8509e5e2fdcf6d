"""Tool calls and tools read from every shape agents write them in, and the checks every agent
reader shares: where an item sits (its path, for errors) and the row limits on what it holds.

One call reader takes every shape: ``{name, arguments}`` (or RAGAS's ``args``, Anthropic's
``input``, DeepEval's ``input_parameters`` / ``inputParameters``), OpenAI's ``{id, type,
function: {name, arguments}}`` with JSON-text arguments, Anthropic's ``{type: tool_use, id,
name, input}``. A call's ``type`` is DeepEval's (``FUNCTION`` or ``MCP``, any case), OpenAI's
``function``, or Anthropic's block type (``tool_use``, ``mcp_tool_use``).

The limits: nothing nests deeper than the row's ``max_depth`` levels (the row object is
level 1) and no integer is too long to write down. The readers check as they go only what
they do not read as text; when they find anything wrong, the whole field is walked first, so
a field over a limit is refused for that whatever else is wrong with it (``checked``).
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ragmeter.datasets._agent_items import (
    FIELD_LEVEL,
    AgentFormatError,
    CallType,
    Message,
    Tool,
    ToolCall,
    dump_item,
    make,
)
from ragmeter.datasets._values import INT_CAP, MAX_DEPTH, MAX_INT_DIGITS, too_deep_or_long

__all__ = [
    "Where",
    "checked",
    "listed",
    "path",
    "plain",
    "read_call",
    "read_tool_calls",
    "read_tools",
    "rest_within",
    "shown",
    "text_of",
    "value_within",
    "within",
]

#: where an item sits inside its field, as parts: ``(3, "tool_calls", 0)`` is
#: ``[3].tool_calls[0]`` (made into text only for an error)
Where = tuple[str | int, ...]
#: keys a tool call's arguments may come under (ours and OpenAI's, RAGAS's, Anthropic's,
#: DeepEval's and its camel-case JSON)
_ARGUMENT_KEYS = ("arguments", "args", "input", "input_parameters", "inputParameters")
#: a call's ``type`` as written (lower-cased) -> its kind
_CALL_TYPES: dict[str, CallType] = {
    "function": "function",
    "tool_use": "function",
    "mcp": "mcp",
    "mcp_tool_use": "mcp",
}
#: the keys of a call the reader reads (by where its arguments are); any other value is
#: held to the limits
_OPENAI_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = {key: frozenset({"name", key}) for key in _ARGUMENT_KEYS}
_PLAIN_KEYS = {key: frozenset({"id", "type", "name", key}) for key in _ARGUMENT_KEYS}
_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = _SHOWN.maxlong = 60

T = TypeVar("T")


def path(where: Where) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where)


def shown(value: Any) -> str:
    """A value as an error message quotes it: its repr, cut short."""
    return _SHOWN.repr(value)


def plain(value: Any) -> Any:
    """Our own items and another library's message objects (pydantic models) as dicts;
    others as given."""
    if isinstance(value, Message | ToolCall | Tool):
        return dump_item(value)
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) and not isinstance(value, type) else value


def listed(value: Any, what: str) -> list[Any]:
    """``value`` as a new list: a list or tuple, or a JSON text of one (a CSV cell)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise AgentFormatError(
                "", f"expected a list of {what}, got text that is not JSON ({exc})"
            ) from None
        except RecursionError:
            raise AgentFormatError("", "nested too deeply to read", over_limit=True) from None
    if not isinstance(value, list | tuple):
        raise AgentFormatError("", f"expected a list of {what}, got {type(value).__name__}")
    return list(value)  # a copy: what the caller's objects do to theirs cannot reach it


def within(value: Any, room: int, max_depth: int, at: Where) -> None:
    """AgentFormatError unless ``value`` nests at most ``room`` levels (the row's
    ``max_depth`` less where it sits) and holds no integer too long to write down."""
    deep, digits = too_deep_or_long(value, room)
    if deep:
        raise AgentFormatError(path(at), f"nested deeper than {max_depth} levels", over_limit=True)
    if digits is not None:
        raise AgentFormatError(
            path(at),
            f"holds an integer of about {digits:,} digits; numbers in a row have at most "
            f"{MAX_INT_DIGITS:,}",
        )


def rest_within(raw: Mapping[Any, Any], read: frozenset[str], level: int, max_depth: int) -> None:
    """The values of ``raw`` (an object on nesting level ``level``) that its reader does
    not read, and its keys, held to the limits (AgentFormatError if one is over)."""
    room = max_depth - level  # a value sits one level below its object
    for key, value in list(raw.items()):
        if key in read:
            continue
        if type(key) is not str:
            value_within(key, room, max_depth)  # keys sit beside the values
        value_within(value, room, max_depth)


def value_within(value: Any, room: int, max_depth: int) -> None:
    """``within`` for one value, at once for the scalars a row is made of."""
    kind = type(value)
    if kind is str or value is None or kind is bool or kind is float:
        return
    if kind is int and -INT_CAP < value < INT_CAP:
        return
    within(value, room, max_depth, ())


def checked(read: Callable[[list[Any], int], T], items: list[Any], max_depth: int) -> T:
    """``read(items, max_depth)``; when it finds anything wrong, the whole field is held to
    the limits first (a field on the row's level 2), so that an item over a limit is named as
    the field's problem whatever else is wrong. Small limits are checked before reading: the
    readers count on the fixed parts of a message (down to level 7) fitting."""
    if max_depth < 8:
        within(items, max_depth - 1, max_depth, ())
    try:
        return read(items, max_depth)
    except AgentFormatError:
        within(items, max_depth - 1, max_depth, ())
        raise


def text_of(value: Any, where: str) -> str:
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
                raise AgentFormatError(f"{where}[{i}]", "expected a text part")
        return "\n".join(parts)
    raise AgentFormatError(where, f"expected text, got {type(value).__name__}")


def _decode(text: str) -> Any:
    """JSON text as ``json.loads`` reads it, without its per-call overhead in the usual case
    (no surrounding whitespace): ``json.loads`` itself words any error."""
    try:
        value, end = _scan_json(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def _arguments(value: Any, room: int, max_depth: int, at: Where) -> Any:
    """A call's arguments as a JSON value: OpenAI's JSON text parsed, an object kept; held
    to the ``room`` levels left where they sit."""
    if type(value) is str:
        if not value or value.isspace():
            return {}
        try:
            parsed = _decode(value)
        except ValueError as exc:
            raise AgentFormatError(path(at), f"arguments are not valid JSON ({exc})") from None
        except RecursionError:
            raise AgentFormatError(
                path(at), f"nested deeper than {max_depth} levels", over_limit=True
            ) from None
        # a short text cannot nest deeper than it has brackets, nor hold a long integer
        if len(value) > MAX_INT_DIGITS or value.count("{") + value.count("[") > room:
            within(parsed, room, max_depth, at)
        return parsed
    if value is None:
        return {}
    if isinstance(value, str):  # a subclass of str: as text
        return _arguments(str(value), room, max_depth, at)
    within(value, room, max_depth, at)
    return value


def _call_type(given: Any, at: Where) -> CallType:
    found = _CALL_TYPES.get(given) if type(given) is str else None
    if found is None:
        found = _CALL_TYPES.get(given.lower()) if isinstance(given, str) else None
        if found is None:
            raise AgentFormatError(
                path((*at, "type")),
                f"unknown tool call type {shown(given)} (expected FUNCTION or MCP)",
            )
    return found


def read_call(
    raw: Any, at: Where, level: int, max_depth: int, number: int | None = None
) -> ToolCall:
    """One tool call (at ``at``, on nesting level ``level``) in any of the shapes. A call
    without an id gets ``call_<number>`` when a number is given."""
    if type(raw) is not dict:
        raw = plain(raw)
        if not isinstance(raw, Mapping):
            raise AgentFormatError(
                path(at), f"expected a tool call object, got {type(raw).__name__}"
            )
    kind = raw.get("type")
    if kind is not None and (type(kind) is not str or kind != "function"):
        kind = _call_type(kind, at)
    body, body_level = raw.get("function"), level
    if type(body) is dict or isinstance(body, Mapping):
        if not raw.keys() <= _OPENAI_KEYS:
            rest_within(raw, _OPENAI_KEYS, level, max_depth)
        at, body_level = (*at, "function"), level + 1
        key = "arguments" if "arguments" in body else _argument_key(body)
        if not body.keys() <= _FUNCTION_KEYS[key]:
            rest_within(body, _FUNCTION_KEYS[key], body_level, max_depth)
    else:
        body = raw
        key = "arguments" if "arguments" in body else _argument_key(body)
        if not raw.keys() <= _PLAIN_KEYS[key]:
            rest_within(raw, _PLAIN_KEYS[key], level, max_depth)
    name = body.get("name")
    if type(name) is not str or not name:
        if not isinstance(name, str) or not name:
            raise AgentFormatError(path((*at, "name")), "a tool call needs a name")
        name = str(name)
    arguments = _arguments(body.get(key), max_depth - body_level, max_depth, (*at, key))
    call_id = raw.get("id")
    if call_id is None:
        call_id = None if number is None else f"call_{number}"
    elif type(call_id) is not str:
        value_within(call_id, max_depth - level, max_depth)
        call_id = str(call_id)
    return make(ToolCall, (name, arguments, call_id, kind or "function"))


def _argument_key(body: Mapping[str, Any]) -> str:
    """The key a call's arguments come under (``arguments`` when there are none)."""
    if "arguments" in body:
        return "arguments"
    return next((k for k in _ARGUMENT_KEYS if k in body), "arguments")


def read_tool_calls(value: Any, max_depth: int = MAX_DEPTH) -> tuple[ToolCall, ...]:
    """Expected tool calls (``reference_tool_calls``, DeepEval's ``expected_tools``), in
    order; AgentFormatError naming the item."""
    return checked(_calls, listed(value, "tool calls"), max_depth)


def _calls(items: list[Any], max_depth: int) -> tuple[ToolCall, ...]:
    level = FIELD_LEVEL + 1
    return tuple(read_call(item, (i,), level, max_depth) for i, item in enumerate(items))


def read_tools(value: Any, max_depth: int = MAX_DEPTH) -> tuple[Tool, ...]:
    """Tools on offer: OpenAI's ``{type: function, function: {name, description,
    parameters}}``, Anthropic's ``{name, description, input_schema}`` or ``{name,
    description, parameters}``."""
    items = listed(value, "tools")
    within(items, max_depth - 1, max_depth, ())
    out = []
    for i, item in enumerate(items):
        item = plain(item)
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
        within(schema, max_depth - level, max_depth, (i, key))
        description = body.get("description") or ""
        out.append(Tool(name=str(name), description=str(description), parameters=schema))
    return tuple(out)
