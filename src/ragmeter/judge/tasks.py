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
        # -- agents and conversations: `conversation` is the row's messages in OpenAI's
        # chat form (role, content, tool_calls as {name, arguments}), tool results included
        TaskSpec(
            "goal",
            ("conversation", "reference"),
            {"user_goal": str, "end_state": str, "goal_reached": Verdict},
            None,
            "read `conversation` (a user, an AI agent and its tools): state the `user_goal` "
            "(what the user wants done) and the `end_state` (what the conversation actually "
            "achieved, tool results included); then decide `goal_reached`: verdict true when "
            "`end_state` is the same outcome as `reference` (the desired outcome) when it is "
            "given, else as `user_goal`.",
            "阅读 `conversation`（用户、AI 智能体及其工具）：写出 `user_goal`（用户想完成的事）"
            "和 `end_state`（对话实际达成的结果，含工具结果）；再判断 `goal_reached`：给出了 "
            "`reference`（期望结果）时，`end_state` 与它是同一结果则 verdict 为 true，"
            "否则与 `user_goal` 比较。",
        ),
        TaskSpec(
            "task_outcome",
            ("conversation",),
            {"task": str, "outcome": str, "task_completion": float},
            None,
            "read `conversation`: state the `task` the user gave the agent and the `outcome` "
            "the agent produced (its answers and tool results); give `task_completion` from 0 "
            "(the task is not done at all) to 1 (done completely and correctly).",
            "阅读 `conversation`：写出用户交给智能体的 `task` 和智能体产出的 `outcome`（回答与工具"
            "结果）；给出 `task_completion`，从 0（完全未完成）到 1（完整且正确地完成）。",
        ),
        TaskSpec(
            "topics",
            ("conversation",),
            {"topics": list[str]},
            None,
            "list the distinct `topics` the user asks about in `conversation`, each as a short "
            "phrase, in the order they come up.",
            "按出现顺序列出用户在 `conversation` 中询问的各个不同 `topics`，每个用一个短语表示。",
        ),
        TaskSpec(
            "topic_refused",
            ("conversation", "topics"),
            {"topic_refused": list[Verdict]},
            "topics",
            _VERDICTS_EN.format(
                items="topics",
                test="the AI refused or failed to answer the user about that topic in "
                "`conversation` (verdict true) or answered it",
            ),
            _VERDICTS_ZH.format(
                items="topics",
                test="AI 在 `conversation` 中是否拒绝或未能回答用户关于该主题的问题（是则 verdict "
                "为 true）",
            ),
        ),
        TaskSpec(
            "topic_in_reference",
            ("topics", "reference_topics"),
            {"topic_in_reference": list[Verdict]},
            "topics",
            _VERDICTS_EN.format(
                items="topics", test="the topic falls under any of `reference_topics`"
            ),
            _VERDICTS_ZH.format(
                items="topics", test="该主题是否属于 `reference_topics` 中的任一主题"
            ),
        ),
        TaskSpec(
            "tool_arguments",
            ("conversation", "tool_calls", "available_tools"),
            {"tool_arguments": list[Verdict]},
            "tool_calls",
            _VERDICTS_EN.format(
                items="tool_calls",
                test="its arguments are right for what the user asked in `conversation` and "
                "fit the tool's parameters in `available_tools` (when given): no value missing, "
                "wrong or made up",
            ),
            _VERDICTS_ZH.format(
                items="tool_calls",
                test="其参数是否符合用户在 `conversation` 中的要求、并符合 `available_tools` 中该"
                "工具的参数定义（如有）：没有缺失、错误或编造的值",
            ),
        ),
        TaskSpec(
            "turn_relevance",
            ("conversation", "assistant_turns"),
            {"turn_relevance": list[Verdict]},
            "assistant_turns",
            _VERDICTS_EN.format(
                items="assistant_turns",
                test="that reply of the AI in `conversation` is relevant to what the user said "
                "in the turns just before it",
            ),
            _VERDICTS_ZH.format(
                items="assistant_turns",
                test="AI 在 `conversation` 中的这条回复是否与用户在它之前几轮所说的内容相关",
            ),
        ),
        TaskSpec(
            "knowledge_retention",
            ("conversation", "assistant_turns"),
            {"knowledge_retention": list[Verdict]},
            "assistant_turns",
            _VERDICTS_EN.format(
                items="assistant_turns",
                test="that reply of the AI in `conversation` keeps what the user already told it "
                "(verdict true) or forgets it: asks for it again or contradicts it",
            ),
            _VERDICTS_ZH.format(
                items="assistant_turns",
                test="AI 在 `conversation` 中的这条回复是否记住了用户此前告诉它的信息（是则 "
                "verdict 为 true），还是遗忘了：再次询问或与之矛盾",
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
#: outputs that are a score between 0 and 1
_UNIT_OUTPUTS = frozenset({"score", "task_completion"})


def _reply_model(tasks: Sequence[TaskSpec]) -> type[BaseModel]:
    key = tuple(t.name for t in tasks)
    model = _MODELS.get(key)
    if model is None:
        fields: dict[str, Any] = {}
        for task in tasks:
            for out, kind in task.outputs.items():
                bounded = out in _UNIT_OUTPUTS
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
