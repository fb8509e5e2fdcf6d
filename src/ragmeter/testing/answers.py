"""Deterministic answers of the scripted judge.

ragmeter's own tasks are answered from their JSON inputs with word-overlap rules, so the
verdicts are valid, vary with the data and are the same whichever plan asked. A prompt that
embeds a JSON schema (the style RAGAS uses) gets an instance of that schema. Free-text
prompts in any wording (DB-GPT-style score templates, RagApp answer prompts) are read by
``free_text``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragmeter.testing._testset import scripted_testset_reply
from ragmeter.testing._words import sentences, supported, words
from ragmeter.testing.free_text import UNREADABLE, free_text_reply

__all__ = ["answer_chat", "embed_text", "reply_keys"]

_NONCOMMITTAL = ("i don't know", "i do not know", "not sure", "cannot answer", "不知道", "无法回答")
_KEYS_LINE = re.compile(r'"([a-z_]+)"')
_WORD = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")
EMBEDDING_DIM = 256


def _verdicts(items: Sequence[str], sources: Sequence[str], what: str) -> list[dict[str, Any]]:
    out = []
    for item in items:
        ok = supported(item, sources)
        reason = f"{'found in' if ok else 'not found in'} the {what}"
        out.append({"reason": reason, "verdict": ok})
    return out


def _questions(response: str, count: int = 3) -> list[str]:
    statements = sentences(response) or [response or "the answer"]
    questions = []
    for i in range(count):
        words = statements[i % len(statements)].rstrip(".!?。！？").split()
        start = (i // len(statements)) * 2
        questions.append("What about " + " ".join(words[start : start + 10] or words[:10]) + "?")
    return questions


def _said(inputs: dict[str, Any], role: str) -> list[str]:
    """The contents of the conversation's messages of ``role``."""
    turns = inputs.get("conversation") or []
    return [
        str(m.get("content") or "") for m in turns if isinstance(m, dict) and m.get("role") == role
    ]


def _refused(text: str) -> bool:
    lowered = text.lower()
    return any(p in lowered for p in (*_NONCOMMITTAL, "can't help", "cannot help", "无法帮助"))


def _agent_output(key: str, inputs: dict[str, Any]) -> Any:
    """Agent and conversation tasks, from the conversation's words: the goal is the first
    user message, the end state the last assistant message with the tool results."""
    users, replies = _said(inputs, "user"), _said(inputs, "assistant")
    results = _said(inputs, "tool")
    end = " ".join([*results, replies[-1] if replies else ""]).strip()
    goal = users[0] if users else ""
    if key in ("user_goal", "task"):
        return goal
    if key in ("end_state", "outcome"):
        return end
    if key == "goal_reached":
        wanted = inputs.get("reference") or goal
        ok = supported(wanted, [end])
        return {"reason": f"{'' if ok else 'not '}found in the end state", "verdict": ok}
    if key == "task_completion":
        asked = words(goal)
        return round(len(asked & words(end)) / len(asked), 3) if asked else 0.0
    if key == "topics":
        return [" ".join(u.split()[:8]) for u in users if words(u)]
    if key == "topic_refused":
        verdicts = []
        for topic in inputs.get("topics") or []:
            # the reply after the user message that raised the topic
            turns = inputs.get("conversation") or []
            raised = next((i for i, m in enumerate(turns) if topic in str(m.get("content"))), -1)
            replies_after = (
                str(m.get("content"))
                for m in turns[raised + 1 :]
                if m.get("role") == "assistant" and m.get("content")
            )
            after = next(replies_after, "")
            refused = raised < 0 or not after or _refused(after)
            verdicts.append({"reason": "declined" if refused else "answered", "verdict": refused})
        return verdicts
    if key == "topic_in_reference":
        allowed = [str(t) for t in inputs.get("reference_topics") or []]
        return [
            {"reason": "shares words with a reference topic", "verdict": True}
            if any(words(str(topic)) & words(a) for a in allowed)
            else {"reason": "outside the reference topics", "verdict": False}
            for topic in inputs.get("topics") or []
        ]
    if key == "tool_arguments":
        asked = set().union(*(words(u) for u in users)) if users else set()
        out = []
        for call in inputs.get("tool_calls") or []:
            values = set().union(*(words(v) for v in _leaves((call or {}).get("arguments"))))
            ok = values <= asked
            out.append(
                {
                    "reason": f"{'every' if ok else 'not every'} value is in the request",
                    "verdict": ok,
                }
            )
        return out
    if key in ("turn_relevance", "knowledge_retention"):
        return _turn_verdicts(key, inputs.get("conversation") or [])
    return None


def _leaves(value: Any) -> list[str]:
    """The scalar values inside a JSON value, as text (keys left out)."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if value is None else [str(value)]


def _turn_verdicts(key: str, turns: list[Any]) -> list[dict[str, Any]]:
    """Per assistant reply with text: relevant when it shares a word with the user's message
    before it; retaining unless it asks a question whose words the user already gave."""
    out = []
    heard: set[str] = set()
    last_user = ""
    for m in turns:
        if not isinstance(m, dict):
            continue
        content = str(m.get("content") or "")
        if m.get("role") == "user":
            last_user = content
            heard |= words(content)
        elif m.get("role") == "assistant" and content:
            if key == "turn_relevance":
                ok = bool(words(content) & words(last_user))
                reason = "on the user's words" if ok else "off the user's words"
            else:
                asks = [q for q in sentences(content) if q.rstrip().endswith(("?", "？"))]
                ok = not any(words(q) and words(q) <= heard for q in asks)
                reason = "keeps what the user said" if ok else "asks again for what the user said"
            out.append({"reason": reason, "verdict": ok})
    return out


_AGENT_KEYS = frozenset(
    {
        "user_goal", "end_state", "goal_reached", "task", "outcome", "task_completion",
        "topics", "topic_refused", "topic_in_reference", "tool_arguments", "turn_relevance",
        "knowledge_retention",
    }
)  # fmt: skip


def _task_output(key: str, inputs: dict[str, Any]) -> Any:
    if key in _AGENT_KEYS:
        return _agent_output(key, inputs)
    contexts = inputs.get("contexts") or []
    response_statements = inputs.get("response_statements") or []
    reference_statements = inputs.get("reference_statements") or []
    if key == "response_statements":
        return sentences(inputs.get("response"))
    if key == "reference_statements":
        return sentences(inputs.get("reference"))
    if key == "questions":
        return _questions(inputs.get("response") or "")
    if key == "noncommittal":
        text = (inputs.get("response") or "").lower()
        return any(p in text for p in _NONCOMMITTAL)
    if key == "faithfulness":
        return _verdicts(response_statements, contexts, "contexts")
    if key == "context_usefulness":
        target = inputs.get("target") or ""
        return [
            {"reason": "shares the answer's facts", "verdict": True}
            if any(supported(s, [c]) for s in sentences(target))
            else {"reason": "does not carry the answer's facts", "verdict": False}
            for c in contexts
        ]
    if key == "reference_attribution":
        return _verdicts(reference_statements, contexts, "contexts")
    if key == "response_in_reference":
        return _verdicts(response_statements, reference_statements, "reference")
    if key == "reference_in_response":
        return _verdicts(reference_statements, response_statements, "response")
    if key == "score":
        said = sentences(inputs.get("response"))
        sources = [inputs.get("question") or "", inputs.get("criteria") or "", *contexts]
        backed = sum(supported(s, sources) for s in said)
        return round(backed / len(said), 3) if said else 0.0
    if key == "reason":
        return "scripted verdict: share of response sentences backed by the question and contexts"
    return None


def reply_keys(body: dict[str, Any]) -> list[str] | None:
    """The output keys of a ragmeter task request, or None if it is not one."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        if str(spec.get("name", "")).startswith("ragmeter_"):
            return list((spec.get("schema") or {}).get("properties", {}))
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    last = system.strip().splitlines()[-1] if system.strip() else ""
    if "JSON" in last and ("keys" in last or "键" in last):
        return _KEYS_LINE.findall(last)
    return None


def _schema_instance(schema: dict[str, Any], defs: dict[str, Any], inputs: Any, key: str) -> Any:
    if "$ref" in schema:
        return _schema_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, inputs, key)
    for union in ("anyOf", "oneOf", "allOf"):
        if union in schema:
            options = [o for o in schema[union] if o.get("type") != "null"] or schema[union]
            return _schema_instance(options[0], defs, inputs, key)
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _schema_instance(v, defs, inputs, k) for k, v in props.items()}
    if kind == "array":
        source = inputs.get(key) if isinstance(inputs, dict) else None
        if not isinstance(source, list):
            source = (
                next((v for v in inputs.values() if isinstance(v, list)), None)
                if isinstance(inputs, dict)
                else None
            )
        count = len(source) if isinstance(source, list) and source else 2
        return [_schema_instance(schema.get("items", {}), defs, inputs, key) for _ in range(count)]
    if kind == "integer":
        return 0 if "noncommittal" in key else 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return "noncommittal" not in key
    text = (
        next((v for v in (inputs or {}).values() if isinstance(v, str) and v), "")
        if isinstance(inputs, dict)
        else ""
    )
    return f"What about {text[:80]}?" if key == "question" else (text[:120] or "scripted")


def _embedded_schema_reply(prompt: str) -> str | None:
    marker = "as specified in JSON Schema:\n"
    if marker not in prompt:
        return None
    decoder = json.JSONDecoder()
    try:
        schema, _ = decoder.raw_decode(prompt, prompt.index(marker) + len(marker))
        at = prompt.rfind("input: ")
        inputs = decoder.raw_decode(prompt, at + len("input: "))[0] if at != -1 else {}
    except json.JSONDecodeError:
        return None
    return json.dumps(_schema_instance(schema, schema.get("$defs", {}), inputs, ""))


def _draw(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts``: the same request draws the same number."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "big") / 2.0**64


def _noisy(key: str, output: Any, noise: float, salt: tuple[object, ...]) -> Any:
    """``output`` with each verdict flipped with probability ``noise``: a judge that reads
    the same statement differently from one sample to the next. The flips are fixed by the
    request and ``salt`` (the seed), so a repeated request gets the same reply."""
    if noise <= 0.0 or not isinstance(output, list):
        return output
    flipped = []
    for index, item in enumerate(output):
        judged = isinstance(item, dict) and isinstance(item.get("verdict"), bool)
        if judged and _draw(*salt, key, index, item.get("reason")) < noise:
            item = {"reason": f"{item['reason']} (read again)", "verdict": not item["verdict"]}
        flipped.append(item)
    return flipped


def answer_chat(
    body: dict[str, Any],
    *,
    noise: float = 0.0,
    seed: int = 0,
    pinned: Mapping[str, Any] | None = None,
) -> str:
    """The reply content for a chat completion request; ``noise`` is the share of verdicts
    flipped (fixed per request, ``seed`` and the request's own ``seed`` parameter); a task
    key in ``pinned`` gets that output as given."""
    messages = body.get("messages") or []
    users = [m.get("content") or "" for m in messages if m.get("role") == "user"]
    first_user = users[0] if users else ""
    keys = reply_keys(body)
    if keys is not None:
        try:
            inputs = json.loads(first_user)
        except json.JSONDecodeError:
            inputs = {}
        if isinstance(inputs, dict) and inputs.get("task") == "testset_question":
            return json.dumps(scripted_testset_reply(inputs), ensure_ascii=False)
        salt = (seed, body.get("seed"), first_user)
        pinned = pinned or {}
        outputs = {
            k: pinned[k] if k in pinned else _noisy(k, _task_output(k, inputs), noise, salt)
            for k in keys
        }
        return json.dumps(outputs, ensure_ascii=False)
    prompt = "\n".join(str(m.get("content") or "") for m in messages)
    reply = _embedded_schema_reply(prompt)
    if reply is None:
        reply = free_text_reply(prompt)
    return reply if reply is not None else UNREADABLE


def embed_text(text: str) -> list[float]:
    """A unit vector from hashed words: texts sharing words are similar."""
    vector = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % EMBEDDING_DIM] += 1.0
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm else vector).tolist()
