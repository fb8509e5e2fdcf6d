"""The scripted judge's answers to test set generation prompts: a question built from a
sentence of the passages and that sentence as the answer, in the passages' language.

- ``single``: the longest sentence of the passage; the question names the passage's section
  and the first half of the sentence (at most 8 words, or 12 Chinese characters).
- ``multi``: the longest sentence of each passage, the answer joins them.
- ``abstract``: the first sentence of each passage, asked about the section of the first.
- style ``keywords`` gives the section and the lead words without a question form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ragmeter.judge.tasks import detect_language
from ragmeter.testing._words import words

__all__ = ["scripted_testset_reply"]

_HEADER = re.compile(r'^"([^"\n]{0,300})":\s*')
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
_MARKUP = re.compile(r"[*_`#>|]+|!?\[([^\]]*)\]\([^)]*\)|^\s*(?:[-+]|\d+[.)])\s+")
_EDGE = "，。、；：！？,.;:!? \"'（）()"


def _section(passage: str) -> tuple[str, str]:
    """(section title, body): the last part of the ``"H1-H2": `` header path, if any."""
    found = _HEADER.match(passage)
    if found is None:
        return "", passage
    return found.group(1).split("-")[-1].strip(), passage[found.end() :]


def _sentences(body: str) -> list[str]:
    lines = [_MARKUP.sub(lambda m: m.group(1) or "", line).strip() for line in body.splitlines()]
    text = " ".join(line for line in lines if line)
    return [s.strip() for s in _SENTENCE_END.split(text) if len(words(s)) >= 4]


def _lead(sentence: str, chinese: bool) -> str:
    if chinese:
        core = sentence.strip(_EDGE)
        return core[: min(12, max(2, len(core) // 2))].strip(_EDGE)
    tokens = sentence.rstrip(_EDGE).split()
    half = tokens[: min(8, max(2, len(tokens) // 2))]
    lead = " ".join(half).strip(_EDGE)
    return lead[:1].lower() + lead[1:]


def _pick(passages: Sequence[str], kind: str) -> list[tuple[str, str]]:
    """(section, sentence) per passage used."""
    picked = []
    for passage in passages if kind != "single" else passages[:1]:
        title, body = _section(passage)
        found = _sentences(body)
        if found:
            sentence = found[0] if kind == "abstract" else max(found, key=len)
            picked.append((title, sentence))
    return picked


def scripted_testset_reply(inputs: dict[str, Any]) -> dict[str, str]:
    """``{"question", "answer"}`` for a ``testset_question`` request."""
    passages = [str(p) for p in inputs.get("passages") or []]
    kind = str(inputs.get("kind") or "single")
    picked = _pick(passages, kind) or [("", passages[0] if passages else "")]
    chinese = (inputs.get("language") or detect_language(*passages)) == "zh"
    titles = [t for t, _ in picked if t] or ["this topic" if not chinese else "这个主题"]
    leads = [_lead(s, chinese) for _, s in picked]
    answer = ("" if chinese else " ").join(s for _, s in picked)
    if inputs.get("style") == "keywords":
        return {"question": " ".join([titles[0], *leads]), "answer": answer}
    if chinese:
        topic = "和".join(dict.fromkeys(titles))
        if kind == "abstract":
            question = f"关于{topic}，有哪些要点（比如{leads[0]}）？"
        else:
            question = f"关于{topic}，{'以及'.join(leads)}是怎么回事？"
    else:
        topic = " and ".join(dict.fromkeys(titles))
        if kind == "abstract":
            question = f"What are the main points about {topic}, such as {leads[0]}?"
        else:
            question = f"Regarding {topic}, what is said about {' and '.join(leads)}?"
    return {"question": question, "answer": answer}
