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


def plain_calls_python(items: list[Any], max_depth: int) -> tuple[ToolCall, ...] | None:
    """The usual expected calls, ``{name, arguments}`` with an object of arguments, read in
    one tight loop; None for anything else (the general reader reads and words it)."""
    out = []
    room = max_depth - (FIELD_LEVEL + 1)  # the list, a call
    for raw in items:
        if type(raw) is not dict or "function" in raw:
            return None
        name, arguments, call_id = raw.get("name"), raw.get("arguments"), raw.get("id")
        if type(name) is not str or not name or type(arguments) is not dict:
            return None
        if (call_id is not None and type(call_id) is not str) or too_deep_or_long(
            arguments, room
        ) != (False, None):
            return None
        out.append(make(ToolCall, (name, arguments, call_id)))
    return tuple(out)


_PLAIN_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user"}


def openai_messages_python(items: list[Any], max_depth: int) -> tuple[Message, ...] | None:
    """The usual case, OpenAI's chat messages as agents log them, read in one tight loop: a
    dataset holds thousands of conversations. None for anything else (another format, an
    item to fix or check closely), which the general reader then reads and words."""
    out: list[Message] = []
    calls: dict[str, ToolCall] = {}
    room = max_depth - (MESSAGE_LEVEL + 3)  # the message, tool_calls, a call, function
    for raw in items:
        if type(raw) is not dict:
            return None
        role, content = raw.get("role"), raw.get("content")
        if content is None:
            content = ""
        if type(role) is not str or type(content) is not str:
            return None
        if role == "assistant":
            given = raw.get("tool_calls")
            made: tuple[ToolCall, ...] = ()
            if "tools_called" in raw or "function_call" in raw:
                return None
            if given is not None:
                if type(given) is not list:
                    return None
                for call in given:
                    function = call.get("function") if type(call) is dict else None
                    if type(function) is not dict:
                        return None
                    call_id, name = call.get("id"), function.get("name")
                    text = function.get("arguments")
                    if type(call_id) is not str or type(name) is not str or type(text) is not str:
                        return None
                    if not name or not text or text.count("{") + text.count("[") > room:
                        return None
                    try:
                        arguments, end = _scan_json(text, 0)
                    except (StopIteration, ValueError, RecursionError):
                        return None
                    if end != len(text) or len(text) > MAX_INT_DIGITS:
                        return None
                    made += (make(ToolCall, (name, arguments, call_id)),)
                    calls[call_id] = made[-1]
            out.append(make(Message, ("assistant", content, made, None, None)))
        elif role == "tool":
            call_id = raw.get("tool_call_id")
            found = calls.get(call_id) if type(call_id) is str else None
            if found is None:
                return None
            out.append(make(Message, ("tool", content, (), found.id, found.name)))
        elif role in _PLAIN_ROLES:
            out.append(make(Message, (_PLAIN_ROLES[role], content, (), None, None)))
        else:
            return None
    return tuple(out)


Reader = Callable[[list[Any], int], tuple[Any, ...] | None]


def _load_compiled() -> tuple[Reader, Reader]:
    """The compiled fast readers, or the Python ones when the install had no C compiler."""
    try:
        from ragmeter.datasets import _agent_read
    except ImportError:
        return openai_messages_python, plain_calls_python
    _agent_read.setup(Message, ToolCall, _scan_json)
    return _agent_read.openai_messages, _agent_read.plain_calls


#: ``openai_messages(items, max_depth)`` and ``plain_calls(items, max_depth)``: compiled when
#: built (the same items, made faster and mostly out of the cycle collector's sight)
openai_messages, plain_calls = _load_compiled()
