"""The scripted judge playing an agent: a chat request that offers ``tools`` is answered like a
tool-calling model would, deterministically. Until a tool has answered since the user's last
message, it calls the tool whose name and description share the most words with that message
(arguments: a number from the message for a numeric parameter, else its first capitalised
word after the first, else its last word); once a tool has answered, it replies with the
tools' results."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ragmeter.testing._words import words

__all__ = ["agent_message"]

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_CAPITAL = re.compile(r"\b[A-Z][\w-]*")


def _function(tool: Any) -> Mapping[str, Any]:
    if isinstance(tool, Mapping) and isinstance(tool.get("function"), Mapping):
        return tool["function"]  # type: ignore[no-any-return]
    return tool if isinstance(tool, Mapping) else {}


def _argument(schema: Mapping[str, Any], text: str) -> Any:
    kind = schema.get("type")
    if kind in ("number", "integer"):
        found = _NUMBER.search(text)
        if found is None:
            return 1
        value = float(found.group())
        return int(value) if kind == "integer" or value.is_integer() else value
    if kind == "boolean":
        return True
    capitals = _CAPITAL.findall(text)[1:]
    if capitals:
        return capitals[0]
    tokens = re.findall(r"[\w\u4e00-\u9fff]+", text)
    return tokens[-1] if tokens else ""


def agent_message(body: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant message for a request with ``tools``: a tool call or the final reply."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    said = str(messages[last_user].get("content") or "") if last_user >= 0 else ""
    results = [
        str(m.get("content") or "") for m in messages[last_user + 1 :] if m.get("role") == "tool"
    ]
    tools = [_function(t) for t in body.get("tools") or []]
    tools = [t for t in tools if isinstance(t.get("name"), str) and t["name"]]
    if results or not tools:
        reply = "; ".join(results) if results else f"I have no tool for: {said}"
        return {"role": "assistant", "content": reply}
    asked = words(said)

    def overlap(tool: Mapping[str, Any]) -> int:
        about = f"{str(tool['name']).replace('_', ' ')} {tool.get('description') or ''}"
        return len(words(about) & asked)

    chosen = max(tools, key=overlap)  # the first of the best
    parameters = chosen.get("parameters") or {}
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    arguments = {
        str(name): _argument(schema if isinstance(schema, Mapping) else {}, said)
        for name, schema in (properties or {}).items()
    }
    call = {
        "id": f"call_{len(messages)}",
        "type": "function",
        "function": {"name": chosen["name"], "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}
