"""The usual agent rows read in tight loops: OpenAI's chat messages as agents log them, and
expected calls as ``{name, arguments}`` objects. A dataset holds thousands of conversations,
and the general reader (``datasets.agent``), which takes every format and words every error,
spends most of its time on generality these rows do not need.

Each reader returns None for anything it does not vouch for (another format, an item to fix,
a value to check closely), and the general reader then reads the value from the start. The
two agree on everything the fast one reads (tests/unit/test_dataset_columns.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ragmeter.datasets._agent_items import (
    FIELD_LEVEL,
    MESSAGE_LEVEL,
    Message,
    Role,
    ToolCall,
    make,
)
from ragmeter.datasets._values import MAX_INT_DIGITS, too_deep_or_long

__all__ = [
    "decode_json",
    "openai_messages",
    "openai_messages_python",
    "plain_calls",
    "plain_calls_python",
]

_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def decode_json(text: str) -> Any:
    """JSON text as ``json.loads`` reads it, without its per-call overhead in the usual case
    (no surrounding whitespace): ``json.loads`` itself words any error."""
    try:
        value, end = _scan_json(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


#: the keys the fast readers take, by what holds them; any other key (its value unchecked
#: here) sends the value to the general reader, which checks the whole of it
_CALL_KEYS = frozenset({"name", "arguments", "id"})
_OPENAI_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
_MESSAGE_KEYS: dict[str, frozenset[str]] = {
    "assistant": frozenset({"role", "content", "name", "tool_calls"}),
    "tool": frozenset({"role", "content", "name", "tool_call_id"}),
    "user": frozenset({"role", "content", "name"}),
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
}
_ROLES: dict[str, Role] = {
    "assistant": "assistant",
    "tool": "tool",
    "user": "user",
    "system": "system",
    "developer": "system",
}
_TEXT = (str, type(None))


def plain_calls_python(items: list[Any], max_depth: int) -> tuple[ToolCall, ...] | None:
    """The usual expected calls, ``{name, arguments}`` with an object of arguments (and an
    optional ``id``), read in one tight loop; None for anything else (the general reader
    reads and words it)."""
    out = []
    room = max_depth - (FIELD_LEVEL + 1)  # the list, a call
    for raw in items:
        if type(raw) is not dict or not raw.keys() <= _CALL_KEYS:
            return None
        name, arguments, call_id = raw.get("name"), raw.get("arguments"), raw.get("id")
        if type(name) is not str or not name or type(arguments) is not dict:
            return None
        if type(call_id) not in _TEXT or too_deep_or_long(arguments, room) != (False, None):
            return None
        out.append(make(ToolCall, (name, arguments, call_id)))
    return tuple(out)


def openai_messages_python(items: list[Any], max_depth: int) -> tuple[Message, ...] | None:
    """The usual case, OpenAI's chat messages as agents log them, read in one tight loop: a
    dataset holds thousands of conversations. None for anything else (another format, a key
    it does not take, an item to fix or check closely), which the general reader then reads
    and words. What it takes nests 5 levels below the row (messages, message, tool_calls,
    call, function) and holds only text, so the row's limits hold but for the arguments,
    checked as they are parsed."""
    if max_depth < MESSAGE_LEVEL + 3:  # not even a call fits
        return None
    out: list[Message] = []
    calls: dict[str, ToolCall] = {}
    room = max_depth - (MESSAGE_LEVEL + 3)  # the message, tool_calls, a call, function
    for raw in items:
        if type(raw) is not dict:
            return None
        role, content = raw.get("role"), raw.get("content")
        if type(role) is not str:
            return None
        keys = _MESSAGE_KEYS.get(role)
        if keys is None or not raw.keys() <= keys or type(raw.get("name")) not in _TEXT:
            return None
        if content is None:
            content = ""
        elif type(content) is not str:
            return None
        if role == "assistant":
            made = _openai_calls(raw.get("tool_calls"), calls, room)
            if made is None:
                return None
            out.append(make(Message, ("assistant", content, made, None, None)))
        elif role == "tool":
            call_id = raw.get("tool_call_id")
            found = calls.get(call_id) if type(call_id) is str else None
            if found is None:
                return None
            out.append(make(Message, ("tool", content, (), found.id, found.name)))
        else:
            out.append(make(Message, (_ROLES[role], content, (), None, None)))
    return tuple(out)


def _openai_calls(given: Any, calls: dict[str, ToolCall], room: int) -> tuple[ToolCall, ...] | None:
    """An assistant message's ``tool_calls`` (each entered in ``calls`` by id), or None."""
    if given is None:
        return ()
    if type(given) is not list:
        return None
    made: list[ToolCall] = []
    for call in given:
        if type(call) is not dict or not call.keys() <= _OPENAI_CALL_KEYS:
            return None
        function = call.get("function")
        if type(function) is not dict or not function.keys() <= _FUNCTION_KEYS:
            return None
        call_id, name, text = call.get("id"), function.get("name"), function.get("arguments")
        if type(call_id) is not str or type(name) is not str or type(text) is not str:
            return None
        if type(call.get("type")) not in _TEXT or not name or not text:
            return None
        if len(text) > MAX_INT_DIGITS or text.count("{") + text.count("[") > room:
            return None
        try:
            arguments, end = _scan_json(text, 0)
        except (StopIteration, ValueError, RecursionError):
            return None
        if end != len(text):
            return None
        made.append(make(ToolCall, (name, arguments, call_id)))
        calls[call_id] = made[-1]
    return tuple(made)


Reader = Callable[[list[Any], int], tuple[Any, ...] | None]


def _load_compiled() -> tuple[Reader, Reader]:
    """The compiled fast readers, or the Python ones when the install had no C compiler."""
    try:
        from ragmeter.datasets import _agent_read
    except ImportError:
        return openai_messages_python, plain_calls_python
    _agent_read.setup(Message, ToolCall, _scan_json, MESSAGE_LEVEL, FIELD_LEVEL, MAX_INT_DIGITS)
    return _agent_read.openai_messages, _agent_read.plain_calls


#: ``openai_messages(items, max_depth)`` and ``plain_calls(items, max_depth)``: compiled when
#: built (the same items, made faster and mostly out of the cycle collector's sight)
openai_messages, plain_calls = _load_compiled()
