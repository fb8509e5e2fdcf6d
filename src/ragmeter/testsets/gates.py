"""Quality gates a generated question passes before it is kept, each counted.

- ``standalone``: the question does not point at its source ("the passage", "the
  context", "文中", "上文", ...).
- ``self_answer``: the question does not contain its answer: neither the normalised answer
  as a substring nor ``SELF_ANSWER_SHARE`` or more of the answer's words.
- ``language``: question and answer are in the language asked (``detect_language``).
- ``uses_all``: a ``multi`` answer shares at least ``MIN_SHARED_TERMS`` BM25 terms with
  every one of its source chunks (no request: a group whose answer ignores a chunk is not
  a multi-chunk question).
- ``grounded``: every statement of the answer is supported by the source chunks, judged by
  the Faithfulness metric's tasks and plan (statements, then verdicts: two requests).
- ``duplicate``: the normalised question equals one kept before (exact), or
  ``near_duplicate``: the cosine of its embedding with a kept one's is over the threshold.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from ragmeter.datasets import Row
from ragmeter.judge.engine import JudgeEngine
from ragmeter.judge.plan import TaskPlan
from ragmeter.judge.tasks import Language, detect_language
from ragmeter.judge.usage import Usage
from ragmeter.knowledge.tokenize import tokenize
from ragmeter.testsets.selection import body_of

__all__ = [
    "GATES",
    "GROUNDED_TASKS",
    "MIN_SHARED_TERMS",
    "SELF_ANSWER_SHARE",
    "DuplicateFilter",
    "grounded",
    "language_problem",
    "normalise",
    "self_answer_problem",
    "standalone_problem",
    "unused_source_problem",
]

#: every gate in the order a candidate meets them
GATES = (
    "standalone",
    "self_answer",
    "language",
    "uses_all",
    "grounded",
    "duplicate",
    "near_duplicate",
)
#: terms a multi-chunk answer must share with each of its chunks
MIN_SHARED_TERMS = 2
#: the Faithfulness metric's judge tasks, asked of (question, answer, source chunks)
GROUNDED_TASKS = ("response_statements", "faithfulness")
#: share of the answer's words found in the question at which it gives its answer away
SELF_ANSWER_SHARE = 0.8

_POINTERS_EN = re.compile(
    r"\b(?:the|this|that|above|given|provided|following)\s+"
    r"(?:passages?|context|contexts|text|texts|excerpts?|documents?|articles?|paragraphs?|"
    r"sections?|snippets?)\b|\baccording to the (?:above|author)\b|\bmentioned above\b",
    re.IGNORECASE,
)
_POINTERS_ZH = (
    "文中",
    "上文",
    "本文",
    "原文",
    "该段",
    "此段",
    "段落中",
    "材料中",
    "上述",
    "以上内容",
    "文章中",
)
_WORD = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")
_STOP_WORDS = (
    "a an the of to in on for and or is are was were be by with as at it its this that from "
    "what which how why who when where does do can"
)
_STOP = frozenset(_STOP_WORDS.split(" "))


def normalise(text: str) -> str:
    """Lower case, NFKC, punctuation and spaces dropped: the form exact duplicates share."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return "".join(_WORD.findall(folded))


def _words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKC", text).lower()
    return [w for w in _WORD.findall(folded) if w not in _STOP]


def standalone_problem(question: str) -> str | None:
    """Why the question does not stand alone, or None."""
    found = _POINTERS_EN.search(question)
    if found:
        return f"refers to its source ('{found.group(0)}')"
    for pointer in _POINTERS_ZH:
        if pointer in question:
            return f"refers to its source ('{pointer}')"
    return None


def self_answer_problem(question: str, answer: str) -> str | None:
    """Why the question gives its own answer away, or None."""
    q, a = normalise(question), normalise(answer)
    if a and a in q:
        return "the question contains the answer"
    answer_words = set(_words(answer))
    if len(answer_words) >= 3:
        share = len(answer_words & set(_words(question))) / len(answer_words)
        if share >= SELF_ANSWER_SHARE:
            return f"the question holds {share:.0%} of the answer's words"
    return None


def unused_source_problem(answer: str, contexts: Sequence[str]) -> str | None:
    """Why the answer does not use every one of ``contexts`` (it shares fewer than
    ``MIN_SHARED_TERMS`` terms with one), or None."""
    terms = set(tokenize(answer))
    for number, context in enumerate(contexts, start=1):
        shared = terms & set(tokenize(body_of(context)))
        if len(shared) < MIN_SHARED_TERMS:
            return f"the answer uses nothing of source chunk {number} of {len(contexts)}"
    return None


def language_problem(question: str, answer: str, language: Language) -> str | None:
    """Why the question or answer is not in ``language``, or None."""
    for what, text in (("question", question), ("answer", answer)):
        found = detect_language(text)
        if found != language:
            return f"the {what} is in {found}, not {language}"
    return None


async def grounded(
    judge: JudgeEngine,
    question: str,
    answer: str,
    contexts: Sequence[str],
    language: Language,
    usage: Usage,
) -> str | None:
    """Why the answer is not supported by ``contexts`` (a statement the judge finds
    unsupported, or no statement at all), or None when every statement is. The Faithfulness
    metric's own tasks and plan: the answer's statements, then one verdict per statement."""
    plan = TaskPlan(judge, {task: {"groundedness"} for task in GROUNDED_TASKS}, language=language)
    row = Row(query=question, response=answer, retrieved_contexts=list(contexts))
    judged = await plan.judgement(0, row)
    usage.add(judged.cost.get("groundedness", Usage()))
    failure = judged.failure(GROUNDED_TASKS)
    if failure is not None:
        return f"the judge failed: {failure[0]}"
    statements: list[str] = judged.outputs["response_statements"]
    verdicts: list[dict[str, object]] = judged.outputs["faithfulness"]
    if not statements:
        return "the judge found no statement in the answer"
    for statement, verdict in zip(statements, verdicts, strict=True):
        if not verdict["verdict"]:
            return f"unsupported: {statement!r} ({verdict.get('reason') or 'no reason'})"
    return None


class DuplicateFilter:
    """The questions kept so far: exact normalised text and unit embedding vectors (one
    matrix, grown by doubling, so each check is one matrix-vector product)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._texts: set[str] = set()
        self._vectors: np.ndarray | None = None
        self._count = 0

    def problem(self, question: str, vector: np.ndarray | None) -> tuple[str, str] | None:
        """(gate, reason) when ``question`` duplicates a kept one, else None."""
        if normalise(question) in self._texts:
            return "duplicate", "the same question (normalised) was kept before"
        if vector is not None and self._vectors is not None and self._count:
            cosine = float(np.max(self._vectors[: self._count] @ vector))
            if cosine > self.threshold:
                return "near_duplicate", f"cosine {cosine:.3f} with a kept question"
        return None

    def keep(self, question: str, vector: np.ndarray | None) -> None:
        self._texts.add(normalise(question))
        if vector is None:
            return
        if self._vectors is None:
            self._vectors = np.zeros((16, len(vector)), dtype=np.float32)
        elif self._count == len(self._vectors):
            grown = np.zeros((2 * len(self._vectors), self._vectors.shape[1]), dtype=np.float32)
            grown[: self._count] = self._vectors
            self._vectors = grown
        self._vectors[self._count] = vector
        self._count += 1
