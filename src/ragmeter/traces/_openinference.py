"""The OpenInference semantic conventions (the instrumentors for OpenAI, LangChain, LlamaIndex,
DSPy, ...) read from one span: its chat messages, retrieved documents, tool execution, model
and tokens. Lists arrive flattened (``llm.input_messages.0.message.role``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.traces._attrs import Doc, ToolRun, as_int, as_text, indexed, json_value, openai_call
from ragmeter.traces.records import SpanRecord

__all__ = ["DOCUMENT_ID_KEYS", "documents", "llm_messages", "model", "tokens", "tool_run"]

#: metadata keys a document's id is found under when the span has no ``document.id`` (the
#: LangChain instrumentor writes only content and metadata)
DOCUMENT_ID_KEYS = ("id", "doc_id", "document_id", "chunk_id")
#: metadata keys a document's score is found under when the span has no ``document.score``
_SCORE_KEYS = ("score", "relevance_score", "similarity")


def llm_messages(span: SpanRecord) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """The input and output messages of an LLM span in OpenAI's chat format, or None."""
    attrs = span.attributes
    given = [indexed(attrs, "llm.input_messages"), indexed(attrs, "llm.output_messages")]
    if not any(given):
        return None
    inputs, outputs = ([m for m in map(_message, items) if m] for items in given)
    return inputs, outputs


def _message(item: Mapping[str, Any]) -> dict[str, Any] | None:
    role = item.get("message.role")
    if not isinstance(role, str):
        return None
    message: dict[str, Any] = {"role": role, "content": _content(item)}
    calls = [
        openai_call(
            call.get("tool_call.id"),
            call.get("tool_call.function.name"),
            call.get("tool_call.function.arguments"),
        )
        for call in indexed(item, "message.tool_calls")
        if isinstance(call.get("tool_call.function.name"), str)
    ]
    if not calls and isinstance(item.get("message.function_call_name"), str):
        calls = [
            openai_call(
                None,
                item["message.function_call_name"],
                item.get("message.function_call_arguments_json"),
            )
        ]
    if calls:
        message["tool_calls"] = calls
    if isinstance(item.get("message.tool_call_id"), str):
        message["tool_call_id"] = item["message.tool_call_id"]
    return message


def _content(item: Mapping[str, Any]) -> str:
    """A message's text: ``message.content``, else its text parts joined."""
    content = item.get("message.content")
    if isinstance(content, str):
        return content
    parts = indexed(item, "message.contents")
    texts = [p.get("message_content.text") for p in parts]
    return "\n".join(t for t in texts if isinstance(t, str))


def documents(span: SpanRecord, prefix: str = "retrieval.documents") -> list[Doc]:
    """The documents of a retriever (or reranker, by ``prefix``) span in rank order. An id
    missing from ``document.id`` is taken from the document's metadata, else from the
    LangChain serialisation of the documents in ``output.value``."""
    attrs = span.attributes
    items = indexed(attrs, prefix)
    serialised = json_value(attrs.get("output.value"))
    listed = serialised.get("documents") if isinstance(serialised, dict) else None
    ids_out = listed if isinstance(listed, list) and len(listed) == len(items) else None
    docs = []
    for rank, item in enumerate(items):
        metadata = json_value(item.get("document.metadata"))
        metadata = metadata if isinstance(metadata, dict) else {}
        doc_id = item.get("document.id")
        if doc_id is None:
            doc_id = next((metadata[k] for k in DOCUMENT_ID_KEYS if k in metadata), None)
        if doc_id is None and ids_out is not None and isinstance(ids_out[rank], dict):
            doc_id = ids_out[rank].get("id")
        score = item.get("document.score")
        if score is None:
            score = next((metadata[k] for k in _SCORE_KEYS if k in metadata), None)
        docs.append(
            Doc(
                None if doc_id is None else str(doc_id),
                as_text(item.get("document.content")) or "",
                float(score)
                if isinstance(score, int | float) and not isinstance(score, bool)
                else None,
                metadata,
            )
        )
    return docs


def tool_run(span: SpanRecord) -> ToolRun | None:
    """A TOOL span's execution: ``tool.name`` (else the span's name), the arguments it was
    called with (``input.value``) and its result (``output.value``; LangChain's serialised
    ToolMessage gives its content and the call's id)."""
    if span.kind != "TOOL":
        return None
    attrs = span.attributes
    call_id = attrs.get("tool_call.id") or attrs.get("tool.id")
    result = attrs.get("output.value")
    message = json_value(result)
    data = message.get("data") if isinstance(message, dict) else None
    if isinstance(data, dict) and message.get("type") == "tool" and "content" in data:
        result = data["content"]
        call_id = call_id or data.get("tool_call_id")
    return ToolRun(
        None if call_id is None else str(call_id),
        str(attrs.get("tool.name") or span.name),
        as_text(attrs.get("input.value")) or "{}",
        as_text(result),
        span.start_ns,
    )


def model(span: SpanRecord) -> str | None:
    """The model that answered: ``llm.response.model_name``, else ``llm.model_name``."""
    for key in ("llm.response.model_name", "llm.model_name", "llm.request.model_name"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def tokens(span: SpanRecord) -> tuple[int, int] | None:
    """(prompt, completion) tokens of the span, or None when it counts neither (a span that
    gives only ``llm.token_count.total`` says not how it splits, so it is not counted)."""
    prompt = as_int(span.attributes.get("llm.token_count.prompt"))
    completion = as_int(span.attributes.get("llm.token_count.completion"))
    if prompt is None and completion is None:
        return None
    return prompt or 0, completion or 0
