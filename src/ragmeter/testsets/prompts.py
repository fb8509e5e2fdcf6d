"""The generation prompts (English and Chinese): one request writes a question and its
reference answer from one to three passages.

The user message is one JSON object: ``task`` (always ``testset_question``), ``kind``
(single, multi, abstract), ``style``, ``language`` and ``passages``; the reply is one JSON
object with ``question`` and ``answer``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.judge.tasks import Language

__all__ = ["GENERATION_TASK", "GeneratedQA", "GenerationPrompt", "generation_prompt"]

GENERATION_TASK = "testset_question"


class GeneratedQA(BaseModel):
    """The judge's reply: a question and the answer the passages give to it."""

    model_config = ConfigDict(extra="ignore")

    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)


_KIND = {
    "en": {
        "single": "Write one question that the passage answers, and its answer.",
        "multi": (
            "Write one question whose answer needs every passage (each gives part of it), "
            "and its answer, which uses all of them."
        ),
        "abstract": (
            "Write one broader question about the theme the passages share (an overview, a "
            "comparison or a why), and its answer, which summarises them."
        ),
    },
    "zh": {
        "single": "写一个该段落能够回答的问题，并给出答案。",
        "multi": (
            "写一个需要用到全部段落才能回答的问题（每个段落提供一部分答案），"
            "并给出用到全部段落的答案。"
        ),
        "abstract": (
            "就这些段落共同的主题写一个更概括的问题（概述、比较或原因），并给出总结它们的答案。"
        ),
    },
}

_STYLE = {
    "en": {
        "plain": "Word it as a clear, natural question.",
        "concise": "Word it as briefly as possible.",
        "conversational": "Word it as a user would ask in a chat, informally.",
        "keywords": "Word it as a keyword search query, not a full sentence.",
        "typos": "Word it naturally but with one or two typing mistakes.",
    },
    "zh": {
        "plain": "用清楚、自然的问句表达。",
        "concise": "尽量简短地表达。",
        "conversational": "像用户在聊天中随口提问那样表达。",
        "keywords": "写成关键词搜索，而不是完整句子。",
        "typos": "自然表达，但带一两个错别字。",
    },
}

_RULES = {
    "en": (
        "You write test questions for a retrieval-augmented assistant. The user message is one "
        "JSON object; `passages` are texts from a knowledge base.\n"
        "{kind}\n{style}\n"
        "Rules: the question must stand alone: a reader who has never seen the passages "
        "understands it, so never refer to 'the passage', 'the context', 'the text' or 'the "
        "document'; name the subject instead. The question must not contain its answer. The "
        "answer states only facts the passages give, in one to three sentences. Write both in "
        "English."
    ),
    "zh": (
        "你为检索增强问答助手编写测试问题。用户消息是一个 JSON 对象；"
        "`passages` 是知识库中的文本。\n"
        "{kind}\n{style}\n"
        "规则：问题必须独立成立，没读过这些段落的人也能看懂，所以不要说“文中”“上文”“该段落”"
        "“材料”，而要直接写出所问的对象。问题不能包含答案。答案只陈述段落给出的事实，一到三句话。"
        "问题和答案都用中文。"
    ),
}

_REPLY = {
    "en": (
        'Reply with one JSON object and nothing else, with exactly the keys: "question", "answer".'
    ),
    "zh": '只回复一个 JSON 对象，不要其他内容，且恰好包含这些键："question", "answer"。',
}


@dataclass(frozen=True, slots=True)
class GenerationPrompt:
    """A ready generation request."""

    system: str
    user: str


_PERSONA = {
    "en": "Ask it as this person would: {persona}.",
    "zh": "以这个身份提问：{persona}。",
}


def generation_prompt(
    kind: str,
    passages: Sequence[str],
    language: Language,
    style: str = "plain",
    *,
    persona: str | None = None,
) -> GenerationPrompt:
    """The request that writes one ``kind`` question in ``language`` from ``passages``,
    worded in ``style`` and, if given, as ``persona`` would ask it."""
    wording = _STYLE[language][style]
    if persona:
        wording += " " + _PERSONA[language].format(persona=persona)
    system = "\n".join(
        (
            _RULES[language].format(kind=_KIND[language][kind], style=wording),
            _REPLY[language],
        )
    )
    payload = {
        "task": GENERATION_TASK,
        "kind": kind,
        "style": style,
        "language": language,
        "passages": list(passages),
    }
    return GenerationPrompt(system, json.dumps(payload, ensure_ascii=False))
