"""The spans of one trace summed up as one of our rows (``TraceRecord``), read by the
OpenInference semantic conventions and the OpenTelemetry GenAI conventions alike.

A trace arrives over several export requests, its root often last: ``trace_of`` is asked again
with every span seen so far and says whether the root has arrived (``complete``). A trace
across processes (a gateway, the app behind it, the context passed in ``traceparent``):
each span keeps its parent; one whose parent is another process's (OTLP's IS_REMOTE flag)
is the root until that parent arrives, and the row is read from it even then when the
real root carries no ``input.value`` / ``output.value``. The row ("the root" below: that
span):

- ``query``: the root span's ``input.value`` when the root is not itself an LLM call: text
  as it is; in a JSON object, the text under a known key (``query``, ``question``,
  ``input``, ...), or the object under one read so (three deep at most), else the object's
  only text field. Else the first LLM call's last user message; else a retriever's query;
  else the root's JSON ``input.value`` as sent.
- ``response``: the root's ``output.value`` likewise (``output``, ``answer``, ``response``,
  ``result``, ...); else the last LLM call's answer; else the JSON ``output.value`` as sent.
- ``retrieved_contexts`` / ``retrieved_ids``: the documents of the last reranker's output
  when there is one, else of every retriever span in start order, in rank order (ids only
  when every document has one; scores go to ``metadata.document_scores``).
- ``messages``: the conversation in OpenAI's chat format with ``tool_calls``: the last LLM
  call's input messages and its answer (tool spans fill in results the call did not carry);
  with no LLM messages, the tool spans' calls and results between query and response.
- ``reference``: what the app attached as the ``ragmeter.reference`` attribute, or as
  ``reference`` in OpenInference's ``metadata`` JSON (the root span's first).
- ``metadata``: service, model, tokens, latency_ms, session and user ids, document scores,
  the GenAI data source, and the app's own ``metadata`` attribute (the root's) as ``app``.

Tokens are summed over the spans that count tokens and have no descendant that does, so a
framework's span and the client span inside it (both counting one call), or an agent's total
over its calls, are counted once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ragmeter.errors import ConfigError
from ragmeter.traces import _genai, _openinference
from ragmeter.traces._attrs import Doc, ToolRun, as_text, json_value, openai_call
from ragmeter.traces.records import SpanRecord, TraceRecord

__all__ = ["REFERENCE_ATTRIBUTE", "trace_of"]

#: the span attribute an app puts a reference answer in (also read: ``reference`` in
#: OpenInference's ``metadata`` JSON)
REFERENCE_ATTRIBUTE = "ragmeter.reference"
#: keys of a JSON object input (or output) that hold the question (or answer) as text
_INPUT_KEYS = ("query", "question", "input", "user_input", "text", "prompt", "message")
_OUTPUT_KEYS = ("output", "answer", "response", "result", "content", "text")
#: objects within objects a JSON input (or output) is looked into for its text
_NESTED = 3
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


class _Call(NamedTuple):
    """An LLM call: its span and its messages in OpenAI's chat format."""

    span: SpanRecord
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]


def trace_of(spans: Sequence[SpanRecord]) -> TraceRecord:
    """The trace of ``spans`` (all of one trace, as many as have arrived, in any order; a
    span sent twice counts once) summed up as a TraceRecord with its row fields."""
    if not spans:
        raise ConfigError("a trace needs at least one span")
    unique = sorted({s.span_id: s for s in spans}.values(), key=lambda s: (s.start_ns, s.end_ns))
    root = _root(unique)
    top = _top(root, unique)
    calls = _calls(unique)
    input_tokens, output_tokens = _tokens(unique)
    start = min(s.start_ns for s in unique)
    end = max(s.end_ns for s in unique)
    service = (root or unique[0]).service
    model = _model(unique, calls)
    session = _first(root, unique, ("session.id", "gen_ai.conversation.id"))
    user = _first(root, unique, ("user.id", "enduser.id"))
    row, scores = _row(top, unique, calls)
    metadata = {
        "service": service,
        "model": model,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "latency_ms": max(0, end - start) / 1e6,
        "session_id": session,
        "user_id": user,
        "document_scores": scores if any(x is not None for x in scores) else None,
        "data_source": _first(root, unique, ("gen_ai.data_source.id",)),
        "app": _app_metadata(top),
    }
    row["metadata"] = {k: v for k, v in metadata.items() if v is not None}
    return TraceRecord(
        trace_id=unique[0].trace_id,
        name=root.name if root else "",
        service=service,
        start_ns=start,
        end_ns=end,
        status=_status(root, unique),
        complete=root is not None,
        row=row,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        session_id=session,
        user_id=user,
        span_count=len(unique),
    )


def _root(spans: Sequence[SpanRecord]) -> SpanRecord | None:
    """The span without a parent; else one whose parent is in another process (OTLP's
    IS_REMOTE flag) and has not arrived: the root here until that parent does."""
    root = next((s for s in spans if s.parent_id is None), None)
    if root is None:
        ids = {s.span_id for s in spans}
        root = next((s for s in spans if s.remote_parent and s.parent_id not in ids), None)
    return root


def _top(root: SpanRecord | None, spans: Sequence[SpanRecord]) -> SpanRecord | None:
    """The span the row's question and answer are read from: the root, unless it carries
    neither ``input.value`` nor ``output.value`` and a process below it has a top span that
    does (a gateway's root over an instrumented app's)."""
    tops = [root, *(s for s in spans if s.remote_parent)] if root else []
    found = (s for s in tops if "input.value" in s.attributes or "output.value" in s.attributes)
    return next(found, root)


def _calls(spans: Sequence[SpanRecord]) -> list[_Call]:
    calls = []
    for span in spans:
        found = _openinference.llm_messages(span) or _genai.llm_messages(span)
        if found is not None:
            calls.append(_Call(span, *found))
    return calls


def _row(
    root: SpanRecord | None, spans: Sequence[SpanRecord], calls: list[_Call]
) -> tuple[dict[str, Any], list[float | None]]:
    """The row fields (metadata apart) and the retrieved documents' scores."""
    is_call = root is not None and any(c.span is root for c in calls)
    query = (None if is_call else _text(root, "input.value", _INPUT_KEYS)) or _first_user(calls)
    query = query or _retriever_query(spans)
    query = query or (None if is_call else _json_text(root, "input.value")) or ""
    response = None if is_call else _text(root, "output.value", _OUTPUT_KEYS)
    response = response or _last_answer(calls)
    response = response or (None if is_call else _json_text(root, "output.value"))
    row: dict[str, Any] = {"query": query}
    if response is not None:
        row["response"] = response
    docs = _documents(spans)
    if docs:
        row["retrieved_contexts"] = [d.content for d in docs]
        if all(d.id is not None for d in docs):
            row["retrieved_ids"] = [d.id for d in docs]
    tools = [t for t in map(_tool_run, spans) if t is not None]
    messages = _conversation(calls, tools, query, response)
    if messages:
        row["messages"] = messages
    reference = _reference(root, spans)
    if reference is not None:
        row["reference"] = reference
    return row, [d.score for d in docs]


def _text(span: SpanRecord | None, key: str, keys: Sequence[str]) -> str | None:
    """A span's ``input.value`` / ``output.value`` as text: plain text as it is; in a JSON
    object, the first of ``keys`` holding text, or holding an object read so (nested up to
    ``_NESTED`` deep), else the object's only text field; else None (see ``_json_text``)."""
    if span is None:
        return None
    value = json_value(span.attributes.get(key))
    for _ in range(_NESTED):
        if not isinstance(value, Mapping):
            break
        known = [value[k] for k in keys if isinstance(value.get(k), str)]
        known += [value[k] for k in keys if isinstance(value.get(k), Mapping)]
        texts = [v for v in value.values() if isinstance(v, str) and v]
        value = next(iter(known), texts[0] if len(texts) == 1 else None)
    return value if isinstance(value, str) and value else None


def _json_text(span: SpanRecord | None, key: str) -> str | None:
    """A span's ``input.value`` / ``output.value`` as sent, when it is JSON of a structure
    (the last resort: a row with the JSON is scored, one without a query is not)."""
    value = span.attributes.get(key) if span is not None else None
    parsed = json_value(value)
    return value if isinstance(value, str) and isinstance(parsed, Mapping | list) else None


def _first_user(calls: list[_Call]) -> str | None:
    for call in calls:
        users = [m["content"] for m in call.inputs if m["role"] == "user" and m.get("content")]
        if users:
            return str(users[-1])
    return None


def _last_answer(calls: list[_Call]) -> str | None:
    for call in sorted(calls, key=lambda c: c.span.end_ns, reverse=True):
        said = [m["content"] for m in call.outputs if m["role"] == "assistant" and m.get("content")]
        if said:
            return str(said[0])
    return None


def _retriever_query(spans: Sequence[SpanRecord]) -> str | None:
    for span in spans:
        if span.kind in ("RETRIEVER", "retrieval"):
            text = span.attributes.get("gen_ai.retrieval.query.text")
            text = text or _text(span, "input.value", _INPUT_KEYS)
            if isinstance(text, str) and text:
                return text
    return None


def _documents(spans: Sequence[SpanRecord]) -> list[Doc]:
    """The last reranker's output documents, else every retriever's, in order."""
    rerankers = [s for s in spans if s.kind == "RERANKER"]
    for span in reversed(rerankers):
        docs = _openinference.documents(span, "reranker.output_documents")
        if docs:
            return docs
    docs = []
    for span in spans:
        if span.kind == "RETRIEVER":
            docs += _openinference.documents(span)
        elif span.kind == "retrieval" or "gen_ai.retrieval.documents" in span.attributes:
            docs += _genai.documents(span)
    return docs


def _tool_run(span: SpanRecord) -> ToolRun | None:
    return _openinference.tool_run(span) or _genai.tool_run(span)


def _conversation(
    calls: list[_Call], tools: list[ToolRun], query: str, response: str | None
) -> list[dict[str, Any]]:
    """The trace's conversation: the last LLM call's messages and answer, with the tool
    spans' results for calls it leaves unanswered; else one built from the tool spans."""
    if calls:
        last = max(calls, key=lambda c: (c.span.start_ns, len(c.inputs)))
        messages = [*last.inputs, *last.outputs[:1]]
    elif tools:
        messages = [{"role": "user", "content": query}] if query else []
        for n, run in enumerate(tools):
            call = openai_call(run.id or f"call_{n}", run.name, run.arguments)
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": run.result or ""}
            )
        if response:
            messages.append({"role": "assistant", "content": response})
    else:
        return []
    return _answered(messages, tools)


def _answered(messages: list[dict[str, Any]], tools: list[ToolRun]) -> list[dict[str, Any]]:
    """``messages`` as ``datasets.Row`` reads them: every tool call with an id, every tool
    message tied to an earlier call (a result for no call is left out), and a call left
    unanswered given the result of the tool span that ran it (by id, else by name)."""
    runs = list(tools)
    out: list[dict[str, Any]] = []
    waiting: dict[str, str] = {}  # call id -> tool name, oldest first
    for message in messages:
        role = message.get("role")
        if role not in _ROLES:
            continue
        if role == "tool":
            call_id = message.get("tool_call_id")
            call_id = call_id if call_id in waiting else next(iter(waiting), None)
            if call_id is None:
                continue
            waiting.pop(call_id)
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": as_text(message.get("content")) or "",
                }
            )
            continue
        _flush(out, waiting, runs)
        said = {"role": role, "content": as_text(message.get("content")) or ""}
        calls = [dict(c) for c in message.get("tool_calls") or []]
        for n, call in enumerate(calls):
            call.setdefault("id", f"call_{len(out)}_{n}")
            waiting[call["id"]] = call["function"]["name"]
        out.append({**said, "tool_calls": calls} if calls else said)
    _flush(out, waiting, runs)
    return out


def _flush(out: list[dict[str, Any]], waiting: dict[str, str], runs: list[ToolRun]) -> None:
    """Results of the tool spans for the calls still waiting, where a span ran them."""
    for call_id, name in list(waiting.items()):
        run = next((r for r in runs if r.id == call_id), None)
        run = run or next((r for r in runs if r.id is None and r.name == name), None)
        if run is None:
            continue
        runs.remove(run)
        del waiting[call_id]
        out.append({"role": "tool", "tool_call_id": call_id, "content": run.result or ""})


def _reference(root: SpanRecord | None, spans: Sequence[SpanRecord]) -> str | None:
    for span in [root, *spans] if root else spans:
        value = span.attributes.get(REFERENCE_ATTRIBUTE)
        if isinstance(value, str) and value:
            return value
        metadata = json_value(span.attributes.get("metadata"))
        if isinstance(metadata, Mapping) and isinstance(metadata.get("reference"), str):
            return str(metadata["reference"])
    return None


def _app_metadata(root: SpanRecord | None) -> dict[str, Any] | None:
    value = json_value(root.attributes.get("metadata")) if root else None
    return dict(value) if isinstance(value, Mapping) and value else None


def _tokens(spans: Sequence[SpanRecord]) -> tuple[int | None, int | None]:
    """Input and output tokens over the spans that count them and have no descendant that
    does (ancestors' totals would count the same calls again)."""
    counted = {}
    for span in spans:
        found = _openinference.tokens(span) or _genai.tokens(span)
        if found is not None:
            counted[span.span_id] = found
    if not counted:
        return None, None
    parents = {s.span_id: s.parent_id for s in spans}
    covered: set[str] = set()
    for span_id in counted:
        parent = parents.get(span_id)
        while parent is not None and parent not in covered:
            covered.add(parent)
            parent = parents.get(parent)
    leaves = [n for span_id, n in counted.items() if span_id not in covered]
    return sum(n[0] for n in leaves), sum(n[1] for n in leaves)


def _model(spans: Sequence[SpanRecord], calls: list[_Call]) -> str | None:
    """The model of the last LLM call, else of the last span that names one."""
    ordered = [c.span for c in sorted(calls, key=lambda c: c.span.end_ns)] or list(spans)
    for span in reversed(ordered):
        name = _openinference.model(span) or _genai.model(span)
        if name:
            return name
    return None


def _first(root: SpanRecord | None, spans: Sequence[SpanRecord], keys: Sequence[str]) -> str | None:
    for span in [root, *spans] if root else spans:
        for key in keys:
            value = span.attributes.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
                return str(value)
    return None


def _status(root: SpanRecord | None, spans: Sequence[SpanRecord]) -> str:
    if any(s.status == "error" for s in spans):
        return "error"
    return root.status if root is not None else "unset"
