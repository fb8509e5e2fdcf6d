"""Reading span attributes the conventions write: flattened lists (``prefix.N.suffix``), JSON
text that may hold a structure, and the few shapes both conventions share (a document, a
tool call, a chat message in OpenAI's format)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "Doc",
    "ToolRun",
    "as_int",
    "as_text",
    "indexed",
    "json_value",
    "openai_call",
]


class Doc(NamedTuple):
    """One retrieved document: its id (None when the span gave none), text, score, metadata."""

    id: str | None
    content: str
    score: float | None
    metadata: dict[str, Any]


class ToolRun(NamedTuple):
    """One tool execution (a tool span): the call's id, the tool, its arguments and result
    (JSON text or plain text, as sent), and when it started."""

    id: str | None
    name: str
    arguments: str
    result: str | None
    start_ns: int


def indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The items of a flattened list: ``prefix.0.a``, ``prefix.0.b.c``, ``prefix.1.a`` give
    ``[{"a": .., "b.c": ..}, {"a": ..}]`` in index order. A list of maps sent whole under
    ``prefix`` (as some SDKs do) is taken as it is."""
    whole = attributes.get(prefix)
    if isinstance(whole, list) and all(isinstance(item, Mapping) for item in whole):
        return [dict(item) for item in whole]
    head = prefix + "."
    items: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(head):
            continue
        number, _, rest = key[len(head) :].partition(".")
        if rest and number.isdigit():
            items.setdefault(int(number), {})[rest] = value
    return [items[n] for n in sorted(items)]


def json_value(value: Any) -> Any:
    """``value`` parsed when it is JSON text of an object or a list, else as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def as_text(value: Any) -> str | None:
    """A value as text: a string as it is, a structure as JSON, None as None."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def as_int(value: Any) -> int | None:
    """A token count: an integer (or integral float or digits) that is not negative."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def openai_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A tool call in OpenAI's chat format, its arguments as JSON text: a structure as
    JSON, text that is not JSON (a framework's plain input, a model's broken JSON) as a JSON
    string, so the call can always be read back."""
    if isinstance(arguments, str):
        text = arguments if _is_json(arguments) else json.dumps(arguments, ensure_ascii=False)
    else:
        text = json.dumps(arguments or {}, ensure_ascii=False, default=str)
    call: dict[str, Any] = {"type": "function", "function": {"name": str(name), "arguments": text}}
    if call_id:
        call["id"] = str(call_id)
    return call


def _is_json(text: str) -> bool:
    if not text.strip():
        return True  # no arguments
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True
