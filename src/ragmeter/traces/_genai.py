"""The OpenTelemetry GenAI semantic conventions (``gen_ai.*``) read from one span: chat
messages in each form the conventions have had, retrieved documents, tool execution, model
and tokens.

Messages, newest form first: ``gen_ai.system_instructions`` + ``gen_ai.input.messages`` and
``gen_ai.output.messages`` (messages of typed ``parts``, as JSON text or structured); the
older ``gen_ai.prompt`` / ``gen_ai.completion`` (JSON text of OpenAI messages, plain text, or
flattened ``gen_ai.prompt.N.role``/``content`` and ``gen_ai.completion.N.tool_calls.M.*``),
also as the attributes of ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events;
and the ``gen_ai.{system,user,assistant,tool}.message`` and ``gen_ai.choice`` span events
(their body as ``gen_ai.event.content`` JSON, or its fields as attributes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.traces._attrs import Doc, ToolRun, as_int, as_text, indexed, json_value, openai_call
from ragmeter.traces.records import SpanRecord

__all__ = ["documents", "llm_messages", "model", "tokens", "tool_run"]

Messages = list[dict[str, Any]]
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def llm_messages(span: SpanRecord) -> tuple[Messages, Messages] | None:
    """The input and output messages of a GenAI span in OpenAI's chat format, or None."""
    attrs = span.attributes
    inputs = _system(attrs.get("gen_ai.system_instructions"))
    inputs += _parts_messages(attrs.get("gen_ai.input.messages"))
    outputs = _parts_messages(attrs.get("gen_ai.output.messages"))
    if not inputs and not outputs:
        inputs, outputs = _older(attrs)
    if not inputs and not outputs:
        inputs, outputs = _from_events(span)
    return (inputs, outputs) if inputs or outputs else None


def _system(value: Any) -> Messages:
    parts = json_value(value)
    if isinstance(parts, str) and parts:
        return [{"role": "system", "content": parts}]
    if isinstance(parts, list):
        texts = [p.get("content") for p in parts if isinstance(p, Mapping)]
        text = "\n".join(t for t in texts if isinstance(t, str))
        return [{"role": "system", "content": text}] if text else []
    return []


def _parts_messages(value: Any) -> Messages:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages``: each message's text parts
    joined, its tool calls as OpenAI calls, its tool call responses as tool messages."""
    listed = json_value(value)
    out: Messages = []
    for message in listed if isinstance(listed, list) else []:
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            continue
        if "parts" not in message:
            out.extend(_openai_messages([message]))
            continue
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in message.get("parts") or []:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("content"), str):
                texts.append(part["content"])
            elif kind == "tool_call" and isinstance(part.get("name"), str):
                calls.append(openai_call(part.get("id"), part.get("name"), part.get("arguments")))
            elif kind == "tool_call_response":
                result = as_text(part.get("response", part.get("result")))
                out.append(
                    {"role": "tool", "tool_call_id": part.get("id"), "content": result or ""}
                )
        if texts or calls or message["role"] != "tool":
            said: dict[str, Any] = {"role": message["role"], "content": "\n".join(texts)}
            out.append({**said, "tool_calls": calls} if calls else said)
    return out


def _openai_messages(items: Any) -> Messages:
    """Messages already in OpenAI's chat format (the older ``gen_ai.prompt`` JSON)."""
    out: Messages = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
            continue
        content = item.get("content")
        if isinstance(content, list):
            content = "\n".join(
                p.get("text", "")
                for p in content
                if isinstance(p, Mapping) and p.get("type") == "text"
            )
        message: dict[str, Any] = {"role": item["role"], "content": as_text(content) or ""}
        given = item.get("tool_calls")
        calls = [c for c in map(_call, given if isinstance(given, list) else []) if c]
        if calls:
            message["tool_calls"] = calls
        if item.get("tool_call_id") is not None:
            message["tool_call_id"] = str(item["tool_call_id"])
        out.append(message)
    return out


def _call(call: Any) -> dict[str, Any] | None:
    """An OpenAI (or flattened) tool call, or None when it names no function."""
    if not isinstance(call, Mapping):
        return None
    function = call.get("function")
    function = function if isinstance(function, Mapping) else call
    if not isinstance(function.get("name"), str):
        return None
    return openai_call(call.get("id"), function["name"], function.get("arguments"))


def _older(attrs: Mapping[str, Any]) -> tuple[Messages, Messages]:
    """``gen_ai.prompt`` / ``gen_ai.completion``: JSON messages, text, or flattened."""
    sides: list[Messages] = []
    for key, role in (("gen_ai.prompt", "user"), ("gen_ai.completion", "assistant")):
        value = json_value(attrs.get(key))
        if isinstance(value, list):
            sides.append(_openai_messages(value))
        elif isinstance(value, str):
            sides.append([{"role": role, "content": value}])
        else:
            sides.append(_openai_messages([_flat(item, role) for item in indexed(attrs, key)]))
    return sides[0], sides[1]


def _flat(item: Mapping[str, Any], role: str) -> dict[str, Any]:
    calls = [
        {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
        for c in indexed(item, "tool_calls")
    ]
    message = {"role": item.get("role") or role, "content": item.get("content") or ""}
    if calls:
        message["tool_calls"] = calls
    if item.get("tool_call_id") is not None:
        message["tool_call_id"] = item["tool_call_id"]
    return message


def _from_events(span: SpanRecord) -> tuple[Messages, Messages]:
    inputs: Messages = []
    outputs: Messages = []
    for event in span.events:
        name, attrs = event.get("name"), event.get("attributes") or {}
        if name in ("gen_ai.content.prompt", "gen_ai.content.completion"):
            more = _older(attrs)
            inputs += more[0]
            outputs += more[1]
            continue
        body = json_value(attrs.get("gen_ai.event.content", attrs))
        body = body if isinstance(body, Mapping) else {"content": body}
        if name == "gen_ai.choice":
            message = body.get("message")
            said = dict(message) if isinstance(message, Mapping) else dict(body)
            outputs += _openai_messages([{**said, "role": "assistant"}])
        elif name in _EVENT_ROLES:
            said = {**body, "role": body.get("role") or _EVENT_ROLES[name]}
            if name == "gen_ai.tool.message" and "tool_call_id" not in said:
                said["tool_call_id"] = body.get("id")
            said["tool_calls"] = json_value(said.get("tool_calls"))
            inputs += _openai_messages([said])
    return inputs, outputs


def documents(span: SpanRecord) -> list[Doc]:
    """``gen_ai.retrieval.documents``: objects with ``id`` and ``score`` (and, when the app
    sends them, ``content`` or ``text`` and ``metadata``), structured or as JSON text."""
    listed = json_value(span.attributes.get("gen_ai.retrieval.documents"))
    docs = []
    for item in listed if isinstance(listed, list) else []:
        if not isinstance(item, Mapping):
            continue
        score = item.get("score")
        metadata = item.get("metadata")
        docs.append(
            Doc(
                None if item.get("id") is None else str(item["id"]),
                as_text(item.get("content", item.get("text"))) or "",
                float(score)
                if isinstance(score, int | float) and not isinstance(score, bool)
                else None,
                dict(metadata) if isinstance(metadata, Mapping) else {},
            )
        )
    return docs


def tool_run(span: SpanRecord) -> ToolRun | None:
    """An ``execute_tool`` span: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
    ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``."""
    attrs = span.attributes
    name = attrs.get("gen_ai.tool.name")
    if span.kind != "execute_tool" and not isinstance(name, str):
        return None
    call_id = attrs.get("gen_ai.tool.call.id")
    arguments = attrs.get("gen_ai.tool.call.arguments", attrs.get("input.value"))
    return ToolRun(
        None if call_id is None else str(call_id),
        str(name or span.name),
        as_text(arguments) or "{}",
        as_text(attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))),
        span.start_ns,
    )


def model(span: SpanRecord) -> str | None:
    """``gen_ai.response.model``, else ``gen_ai.request.model``."""
    for key in ("gen_ai.response.model", "gen_ai.request.model"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def tokens(span: SpanRecord) -> tuple[int, int] | None:
    """(input, output) tokens: ``gen_ai.usage.input_tokens`` / ``output_tokens`` (or the older
    ``prompt_tokens`` / ``completion_tokens``), or None when the span counts none."""
    attrs = span.attributes
    given = as_int(attrs.get("gen_ai.usage.input_tokens", attrs.get("gen_ai.usage.prompt_tokens")))
    made = as_int(
        attrs.get("gen_ai.usage.output_tokens", attrs.get("gen_ai.usage.completion_tokens"))
    )
    if given is None and made is None:
        return None
    return given or 0, made or 0
