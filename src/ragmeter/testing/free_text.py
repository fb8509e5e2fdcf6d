"""Free-text prompts in any wording: a judge template asking for a score (DB-GPT's 0-5, or any
range) gets a score line and a reason; an answer prompt (a question and passages) gets an
extractive answer. Both by word overlap, so the scripted model stands in for a real one with
the user's own templates.

A prompt is read as labelled sections: ``Question:`` lines (inline or on the next lines),
``[Context]``, ``## Answer``, ``<passages>...</passages>``. Labels are matched to roles by
keywords in English and Chinese; sections whose label names no role are given one by their
place (the answer of a judge template comes last, the passages are the longest section).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragmeter.testing._words import sentences, supported, words

__all__ = ["UNREADABLE", "PromptParts", "free_text_reply", "read_prompt", "score_scale"]

#: the reply to a prompt naming no question, passages or answer: no digit, so a 0-5 metric
#: reports a null score with this text as the reason instead of a made-up score
UNREADABLE = (
    "scripted reply: the scripted model found no question, passages or answer to read in this "
    "prompt; label them (e.g. 'Question:', 'Context:', 'Answer:')."
)

_ROLE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "question",
        ("question", "query", "q", "ask", "asks", "asked", "user", "input", "reply to",
         "respond to", "问题", "提问", "查询", "用户"),
    ),
    (
        "context",
        ("context", "contexts", "passage", "passages", "document", "documents", "documentation",
         "docs", "source", "sources", "reference", "references", "evidence", "notes", "knowledge",
         "known", "information", "material", "retrieved", "chunks", "facts", "参考", "上下文",
         "段落", "资料", "文档", "背景", "知识"),
    ),
    (
        "answer",
        ("answer", "response", "reply", "a", "said", "output", "prediction", "generated",
         "答案", "回答", "回复"),
    ),
)  # fmt: skip
_COLON_LABEL = re.compile(
    r"^\s*(?:[#>*\-]+\s*)?[\[【<]?\**(?P<label>[^\n:：\[\]【】<>]{1,40}?)\**[\]】>]?\s*[:：]\s*"
    r"(?P<rest>.*)$"
)
_BRACKET_LABEL = re.compile(r"^\s*[\[【](?P<label>[^\]】\n]{1,30})[\]】]\s*(?P<rest>.*)$")
_HEADER_LABEL = re.compile(r"^\s*#{1,6}\s*(?P<label>[^\n#]{1,40}?)\s*$")
_LABELS = (_BRACKET_LABEL, _HEADER_LABEL, _COLON_LABEL)
_XML = re.compile(r"<(?P<tag>[A-Za-z_]{1,30})>(?P<body>.*?)</(?P=tag)>", re.DOTALL)
_SCORING = r"(?:\b(?:scores?|rate|rating|grade|scale|mark)\b|评分|打分|分数|得分)"
_RANGE = r"(\d{1,3})\s*(?:\([^()\n]{0,80}\)\s*)?(?:-|–|—|~|to|and|到|至)\s*(\d{1,3})"
_SCALE = re.compile(_SCORING + r"[^\n\d]{0,40}?" + _RANGE, re.IGNORECASE)
_OUT_OF = re.compile(r"(?:out of|/)\s*(\d{1,3})\b|(\d{1,3})\s*分制", re.IGNORECASE)
_ASKS_SCORE = re.compile(_SCORING, re.IGNORECASE)
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass
class _Section:
    label: str
    role: str | None
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


@dataclass(frozen=True)
class PromptParts:
    """What a free-text prompt holds: its instructions, question, passages and answer (empty
    in an answer prompt, which asks for one)."""

    instructions: str
    question: str
    context: str
    answer: str
    #: whether a label names the answer (a judge template whose answer may be empty)
    answer_labelled: bool = False


def _role(label: str) -> str | None:
    """The role a label names by keyword; one-letter keys (``Q``, ``A``) must be the whole
    label, and a quoted label is a DB-GPT chunk's header path, not a label."""
    text = label.strip().strip("*").lower()
    if len(text.split()) > 5 or text.startswith(('"', "'")):
        return None
    tokens = set(re.findall(r"[a-z]+", text))
    for role, keys in _ROLE_WORDS:
        for key in keys:
            if len(key) == 1:
                hit = text == key
            elif " " in key or _CJK.search(key):
                hit = key in text
            else:
                hit = key in tokens
            if hit:
                return role
    return None


def _label(line: str, open_role: bool) -> tuple[str, str | None, str] | None:
    """(label, role, inline text) when ``line`` starts a section. While a section with a role
    is open, only ``Label:`` and ``[Label]`` lines naming a role start another (headers and
    unknown labels are that section's text)."""
    patterns = (_BRACKET_LABEL, _COLON_LABEL) if open_role else _LABELS
    for pattern in patterns:
        match = pattern.match(line)
        if match is None:
            continue
        label = match["label"].strip()
        rest = match.groupdict().get("rest") or ""
        role = _role(label)
        if role is not None:
            return label, role, rest
        bare = not rest.strip() and len(label.split()) <= 5
        if bare and not open_role:
            return label, None, ""
    return None


def _sections(prompt: str) -> tuple[str, list[_Section]]:
    tags = [
        _Section(m["tag"], _role(m["tag"]), m["body"].strip().splitlines())
        for m in _XML.finditer(prompt)
    ]
    if any(s.role for s in tags):
        return _XML.sub("", prompt).strip(), tags
    intro: list[str] = []
    found: list[_Section] = []
    for line in prompt.splitlines():
        label = _label(line, open_role=bool(found) and found[-1].role is not None)
        if label is not None:
            found.append(_Section(label[0], label[1], [label[2]] if label[2].strip() else []))
        elif found:
            found[-1].lines.append(line)
        else:
            intro.append(line)
    return "\n".join(intro).strip(), found


def _assign(found: list[_Section], judging: bool) -> None:
    """Give unlabelled sections the roles no label claimed: a judge template's answer is its
    last section, the passages its longest, the question what remains."""
    free = [s for s in found if s.role is None and s.text]
    taken = {s.role for s in found if s.role is not None and s.text}
    if judging and "answer" not in taken and free:
        free.pop().role = "answer"
    if "context" not in taken and free:
        longest = max(free, key=lambda s: len(s.text))
        longest.role = "context"
        free.remove(longest)
    if "question" not in taken and free:
        free.pop().role = "question"


def read_prompt(prompt: str) -> PromptParts | None:
    """The parts of a free-text prompt, or None when it has no recognisable question,
    passages or answer."""
    intro, found = _sections(prompt)
    moved = [_take_instructions(s) for s in found if s.role in (None, "answer")]
    labels = [s.label for s in found if s.role is None]  # e.g. "Score from 0 to 5:"
    instructions = "\n".join([intro, *labels, *moved]).strip()
    _assign(found, judging=score_scale(instructions) is not None)
    parts = {role: "\n\n".join(s.text for s in found if s.role == role) for role in
             ("question", "context", "answer")}  # fmt: skip
    unknown = "\n".join(s.label + ":\n" + s.text for s in found if s.role is None)
    if not parts["question"]:
        parts["question"], parts["context"] = _last_question(parts["context"])
    if not parts["question"] and not parts["context"]:
        return None
    return PromptParts(
        instructions=(instructions + "\n" + unknown).strip(),
        question=parts["question"],
        context=parts["context"],
        answer=parts["answer"],
        answer_labelled=any(s.role == "answer" for s in found),
    )


def _last_question(text: str) -> tuple[str, str]:
    """(the last line ending in a question mark, the text without it) for a prompt whose
    question has no label; ("", text) when there is none."""
    lines = text.splitlines()
    for at in range(len(lines) - 1, -1, -1):
        if lines[at].strip().endswith(("?", "？")):
            return lines[at].strip(), "\n".join(lines[:at] + lines[at + 1 :]).strip()
    return "", text


def _take_instructions(section: _Section) -> str:
    """Move lines asking for a score (``Score 0-5 first.`` after the answer) out of a
    section; returns them. Passages and questions are left whole."""
    asks = [line for line in section.lines if _SCALE.search(line)]
    section.lines = [line for line in section.lines if not _SCALE.search(line)]
    return "\n".join(asks)


def score_scale(prompt: str) -> tuple[int, int] | None:
    """The score range a prompt asks for (``0-5``, ``from 0 (...) to 5``, ``1 to 10``, ``out
    of 10``, ``评分范围 0 到 5``); (0, 5) when it asks for a score with no range; None when
    it asks for none."""
    match = _SCALE.search(prompt)
    if match is not None:
        low, high = int(match.group(1)), int(match.group(2))
        return (low, high) if low < high else (high, low)
    if not _ASKS_SCORE.search(prompt):
        return None
    out_of = _OUT_OF.search(prompt)
    if out_of is not None:
        return 0, int(out_of.group(1) or out_of.group(2))
    return 0, 5


def _judge(parts: PromptParts, scale: tuple[int, int], chinese: bool) -> str:
    low, high = scale
    said = sentences(parts.answer)
    if not said:
        if chinese:
            return f"{low}\n答案为空，没有可评分的内容。"
        return f"{low}\nThe answer is empty: there is nothing to score."
    backed = sum(supported(s, [parts.context, parts.question]) for s in said)
    score = low + round((high - low) * backed / len(said))
    if chinese:
        return f"{score}\n答案中有 {backed}/{len(said)} 句可由参考内容或问题支持。"
    return f"{score}\n{backed} of {len(said)} answer sentences are backed by the context."


_CHUNK_PATH = re.compile(r'^"[^"\n]{0,200}":\s*', re.M)


def _answer(parts: PromptParts, chinese: bool) -> str:
    """The two passage sentences sharing most words with the question (a DB-GPT chunk's
    quoted header path is not part of its text)."""
    question = words(parts.question)
    passages = _CHUNK_PATH.sub("", parts.context)
    ranked = sorted(sentences(passages), key=lambda s: -len(words(s) & question))
    best = [s for s in ranked[:2] if words(s) & question]
    if best:
        return " ".join(best)
    return "不知道。" if chinese else "I do not know."


def free_text_reply(prompt: str) -> str | None:
    """A judge's score line and reason, or an app's extractive answer; None when the prompt
    holds neither a question nor passages."""
    parts = read_prompt(prompt)
    if parts is None:
        return None
    scale = score_scale(parts.instructions)
    if scale is not None and (parts.answer or parts.answer_labelled):
        return _judge(parts, scale, bool(_CJK.search(parts.instructions)))
    return _answer(parts, bool(_CJK.search(parts.question or parts.instructions)))
