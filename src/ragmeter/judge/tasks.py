"""The judge's tasks: what each asks, what it returns, and how tasks combine into one request.

A request carries the inputs as one JSON object in the user message and the instructions of
one or more tasks in the system message; the reply is one JSON object with one key per
output. The fused plan puts several tasks in one request, the separate plan one task per
request; either way each task reads the same inputs and returns the same outputs, so scores
do not depend on the plan.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

__all__ = [
    "QUESTION_COUNT",
    "TASKS",
    "JudgeRequest",
    "Language",
    "TaskSpec",
    "Verdict",
    "build_request",
    "detect_language",
]

Language = Literal["en", "zh"]
QUESTION_COUNT = 3


class Verdict(BaseModel):
    """One yes/no judgement with its reason (the reason first, so a model thinks before it
    decides)."""

    model_config = ConfigDict(extra="ignore")

    reason: str = ""
    verdict: bool


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One task: the inputs it reads, the outputs it returns (key -> type) and how many items
    each list output must have (the name of the input list it answers item by item)."""

    name: str
    inputs: tuple[str, ...]
    outputs: Mapping[str, Any]
    per_item: str | None
    en: str
    zh: str


_STATEMENTS_EN = (
    "split `{src}` into short statements that each stand alone: one fact per statement, "
    "pronouns replaced by what they refer to, nothing added. An empty text has no statements."
)
_STATEMENTS_ZH = (
    "把 `{src}` 拆成若干独立的简短陈述：每条只含一个事实，代词替换为所指对象，不添加任何内容。"
    "空文本没有陈述。"
)
_VERDICTS_EN = (
    "for each item of `{items}`, in order, decide whether {test}; give a one-line reason."
)
_VERDICTS_ZH = "对 `{items}` 中的每一项（按顺序）判断{test}，并给出一句理由。"

TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(
            "response_statements",
            ("question", "response"),
            {"response_statements": list[str]},
            None,
            _STATEMENTS_EN.format(src="response"),
            _STATEMENTS_ZH.format(src="response"),
        ),
        TaskSpec(
            "reference_statements",
            ("question", "reference"),
            {"reference_statements": list[str]},
            None,
            _STATEMENTS_EN.format(src="reference"),
            _STATEMENTS_ZH.format(src="reference"),
        ),
        TaskSpec(
            "questions",
            ("response",),
            {"questions": list[str], "noncommittal": bool},
            None,
            f"write {QUESTION_COUNT} different questions that `response` answers, each "
            "answerable from it alone (`questions`); set `noncommittal` to true when the "
            "response is evasive, vague or says it does not know.",
            f"写出 {QUESTION_COUNT} 个不同的、仅凭 `response` 即可回答的问题（`questions`）；"
            "若回答含糊、回避或表示不知道，把 `noncommittal` 设为 true。",
        ),
        TaskSpec(
            "faithfulness",
            ("contexts", "response_statements"),
            {"faithfulness": list[Verdict]},
            "response_statements",
            _VERDICTS_EN.format(
                items="response_statements",
                test="it can be inferred directly from `contexts` (verdict true) or not",
            ),
            _VERDICTS_ZH.format(
                items="response_statements",
                test="能否直接从 `contexts` 推断出来（能则 verdict 为 true）",
            ),
        ),
        TaskSpec(
            "context_usefulness",
            ("question", "contexts", "target"),
            {"context_usefulness": list[Verdict]},
            "contexts",
            _VERDICTS_EN.format(
                items="contexts",
                test="the context was useful in arriving at `target`, the answer to `question`",
            ),
            _VERDICTS_ZH.format(
                items="contexts", test="该上下文是否有助于得出 `target`（即 `question` 的答案）"
            ),
        ),
        TaskSpec(
            "reference_attribution",
            ("contexts", "reference_statements"),
            {"reference_attribution": list[Verdict]},
            "reference_statements",
            _VERDICTS_EN.format(
                items="reference_statements", test="it can be attributed to `contexts`"
            ),
            _VERDICTS_ZH.format(items="reference_statements", test="能否归因于 `contexts`"),
        ),
        TaskSpec(
            "response_in_reference",
            ("response_statements", "reference_statements"),
            {"response_in_reference": list[Verdict]},
            "response_statements",
            _VERDICTS_EN.format(
                items="response_statements",
                test="its fact is stated by `reference_statements`",
            ),
            _VERDICTS_ZH.format(
                items="response_statements", test="其事实是否由 `reference_statements` 给出"
            ),
        ),
        TaskSpec(
            "reference_in_response",
            ("response_statements", "reference_statements"),
            {"reference_in_response": list[Verdict]},
            "reference_statements",
            _VERDICTS_EN.format(
                items="reference_statements",
                test="its fact is stated by `response_statements`",
            ),
            _VERDICTS_ZH.format(
                items="reference_statements", test="其事实是否由 `response_statements` 给出"
            ),
        ),
        TaskSpec(
            "criteria",
            ("criteria", "question", "response", "contexts"),
            {"reason": str, "score": float},
            None,
            "judge `response` to `question` (with `contexts`, if any) against `criteria`; give "
            "`score` from 0 (fails it) to 1 (fully meets it) and a short `reason`.",
            "按 `criteria` 评判针对 `question` 的 `response`（如有 `contexts` 可参考）；"
            "给出 0（不满足）到 1（完全满足）之间的 `score` 和简短的 `reason`。",
        ),
    )
}

_PREAMBLE = {
    "en": (
        "You evaluate the answers of a retrieval-augmented assistant. The user message is one "
        "JSON object of inputs. Do these tasks on it:"
    ),
    "zh": "你负责评估检索增强问答助手的回答。用户消息是一个 JSON 输入对象。请对它完成以下任务：",
}
_REPLY = {
    "en": "Reply with one JSON object and nothing else, with exactly the keys: {keys}.",
    "zh": "只回复一个 JSON 对象，不要其他内容，且恰好包含这些键：{keys}。",
}


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """A ready request: messages, the reply model, and a check of list lengths."""

    system: str
    user: str
    reply_model: type[BaseModel]
    expected_lengths: Mapping[str, int]

    def check(self, reply: BaseModel) -> str | None:
        """Why ``reply`` cannot be used (wrong number of verdicts), or None."""
        for key, expected in self.expected_lengths.items():
            got = len(getattr(reply, key))
            if got != expected:
                return f"`{key}` has {got} items but must have {expected}, one per input item"
        return None


_MODELS: dict[tuple[str, ...], type[BaseModel]] = {}


def _reply_model(tasks: Sequence[TaskSpec]) -> type[BaseModel]:
    key = tuple(t.name for t in tasks)
    model = _MODELS.get(key)
    if model is None:
        fields: dict[str, Any] = {}
        for task in tasks:
            for out, kind in task.outputs.items():
                bounded = out == "score"
                fields[out] = (
                    kind,
                    Field(ge=0.0 if bounded else None, le=1.0 if bounded else None),
                )
        model = create_model(
            "JudgeReply_" + "_".join(key),
            __config__=ConfigDict(extra="ignore"),
            **fields,
        )
        _MODELS[key] = model
    return model


def build_request(
    task_names: Iterable[str], inputs: Mapping[str, Any], language: Language
) -> JudgeRequest:
    """One request doing ``task_names`` on ``inputs`` (only the inputs the tasks read are sent)."""
    tasks = [TASKS[name] for name in task_names]
    wanted = {name for t in tasks for name in t.inputs}
    payload = {k: v for k, v in inputs.items() if k in wanted and v is not None}
    steps = "\n".join(f"{i}. {getattr(t, language)}" for i, t in enumerate(tasks, start=1))
    keys = ", ".join(f'"{out}"' for t in tasks for out in t.outputs)
    system = f"{_PREAMBLE[language]}\n{steps}\n{_REPLY[language].format(keys=keys)}"
    expected = {
        next(iter(t.outputs)): len(payload[t.per_item])
        for t in tasks
        if t.per_item is not None and t.per_item in payload
    }
    return JudgeRequest(
        system=system,
        user=json.dumps(payload, ensure_ascii=False),
        reply_model=_reply_model(tasks),
        expected_lengths=expected,
    )


def detect_language(*texts: str | None) -> Language:
    """``zh`` when Han characters make up a fifth or more of the letters, else ``en``."""
    han = letters = 0
    for text in texts:
        for ch in text or "":
            if "\u4e00" <= ch <= "\u9fff":
                han += 1
                letters += 1
            elif ch.isalpha():
                letters += 1
    return "zh" if letters and han * 5 >= letters else "en"
