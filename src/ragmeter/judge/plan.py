"""Plans: how the judge tasks of one row become requests.

``fused`` (default) sends at most two requests per row for every RAGAS metric together:
1. statements of the response and of the reference, and the generated questions;
2. every verdict that reads the contexts or compares statements, the contexts sent once.

``separate`` sends one task per request, for judges that do better with simple prompts.
Each task reads the same inputs and gives the same outputs in both plans.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from ragmeter.datasets import Row
from ragmeter.errors import ErrorKind, JudgeError, error_kind
from ragmeter.judge._parse import extract_json
from ragmeter.judge.tasks import Language, build_request, detect_language
from ragmeter.judge.usage import Usage

__all__ = ["PlanKind", "RowJudgement", "StructuredJudge", "TaskPlan", "as_structured"]

PlanKind = Literal["fused", "separate"]
LanguageSetting = Literal["auto", "en", "zh"]

#: tasks that read only the row; then tasks that read their outputs (and the contexts)
FIRST = (
    "response_statements",
    "reference_statements",
    "questions",
    "goal",
    "task_outcome",
    "topics",
    "tool_arguments",
    "turn_relevance",
    "knowledge_retention",
)
SECOND = (
    "faithfulness",
    "context_usefulness",
    "reference_attribution",
    "response_in_reference",
    "reference_in_response",
    "topic_refused",
    "topic_in_reference",
)
DEPENDS: dict[str, tuple[str, ...]] = {
    "topic_refused": ("topics",),
    "topic_in_reference": ("topics",),
    "faithfulness": ("response_statements",),
    "reference_attribution": ("reference_statements",),
    "response_in_reference": ("response_statements", "reference_statements"),
    "reference_in_response": ("response_statements", "reference_statements"),
}


class StructuredJudge(Protocol):
    async def ask(
        self, system: str, user: str, reply_model: type[Any], usage: Usage, *, check: Any = None
    ) -> Any: ...


class _TextJudgeAdapter:
    """Lets a plain ``Judge`` (``complete(prompt) -> str``) answer structured tasks."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    async def ask(
        self, system: str, user: str, reply_model: type[Any], usage: Usage, *, check: Any = None
    ) -> Any:
        usage.add(Usage(requests=1))
        text = await self.judge.complete(f"{system}\n\n{user}")
        try:
            reply = reply_model.model_validate(extract_json(text))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError too
            raise JudgeError(f"judge reply unusable: {exc}") from exc
        problem = check(reply) if check is not None else None
        if problem:
            raise JudgeError(f"judge reply unusable: {problem}")
        return reply


def as_structured(judge: Any) -> StructuredJudge:
    if hasattr(judge, "ask"):
        structured: StructuredJudge = judge
        return structured
    return _TextJudgeAdapter(judge)


@dataclass
class RowJudgement:
    """What the judge said about one row: outputs by key, failures (reason and kind) by task,
    cost by metric."""

    language: Language
    outputs: dict[str, Any] = field(default_factory=dict)
    failures: dict[str, tuple[str, ErrorKind]] = field(default_factory=dict)
    cost: dict[str, Usage] = field(default_factory=dict)

    def failure(self, tasks: Sequence[str]) -> tuple[str, ErrorKind] | None:
        """The first of ``tasks`` that failed: its reason and kind (upstream, metric)."""
        for task in tasks:
            if task in self.failures:
                return self.failures[task]
        return None


def _inputs(row: Row) -> dict[str, Any]:
    inputs = {
        "question": row.query,
        "response": row.response,
        "reference": row.reference,
        "contexts": list(row.retrieved_contexts or []),
        "target": row.reference if row.reference is not None else row.response,
    }
    if row.messages is not None:  # an agent's conversation
        inputs.update(conversation_inputs(row))
    return inputs


def conversation_inputs(row: Row) -> dict[str, Any]:
    """The agent tasks' inputs of a row with ``messages``: the conversation in OpenAI's chat
    form, its assistant replies with text, the tool calls made, the tools and topics given."""
    messages = row.messages or ()
    conversation = []
    for m in messages:
        turn: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            turn["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in m.tool_calls]
        if m.role == "tool" and m.name:
            turn["name"] = m.name
        conversation.append(turn)
    calls = [{"name": c.name, "arguments": c.arguments} for m in messages for c in m.tool_calls]
    tools = row.available_tools
    return {
        "conversation": conversation,
        "assistant_turns": [m.content for m in messages if m.role == "assistant" and m.content],
        "tool_calls": calls,
        "available_tools": None if tools is None else [t._asdict() for t in tools],
        "reference_topics": None if row.reference_topics is None else list(row.reference_topics),
    }


class TaskPlan:
    """Runs the judge tasks of each row once, however many metrics read them.

    ``consumers`` maps each task to the metric names that read it; a request's cost is split
    evenly between the metrics reading any task in it.
    """

    def __init__(
        self,
        judge: Any,
        consumers: Mapping[str, set[str]],
        *,
        kind: PlanKind = "fused",
        language: LanguageSetting = "auto",
        max_rows_in_flight: int = 32,
    ) -> None:
        self.judge = as_structured(judge)
        self.consumers = {task: set(names) for task, names in consumers.items()}
        self.kind = kind
        self.language = language
        self._rows: dict[int, asyncio.Task[RowJudgement]] = {}
        self._slots = asyncio.Semaphore(max_rows_in_flight)

    async def judgement(self, index: int, row: Row) -> RowJudgement:
        task = self._rows.get(index)
        if task is None:
            task = self._rows[index] = asyncio.ensure_future(self._judge_row(row))
        return await task

    async def _judge_row(self, row: Row) -> RowJudgement:
        language: Language = (
            detect_language(row.query, row.response) if self.language == "auto" else self.language
        )
        result = RowJudgement(language)
        inputs = _inputs(row)
        async with self._slots:
            for stage in (FIRST, SECOND):
                tasks = [t for t in stage if t in self.consumers]
                groups = [tasks] if self.kind == "fused" else [[t] for t in tasks]
                await asyncio.gather(*(self._request(g, inputs, result) for g in groups if g))
        return result

    async def _request(
        self, tasks: list[str], inputs: dict[str, Any], result: RowJudgement
    ) -> None:
        runnable = []
        for task in tasks:
            blocked = next((d for d in DEPENDS.get(task, ()) if d in result.failures), None)
            if blocked is not None:
                reason, kind = result.failures[blocked]
                result.failures[task] = (f"not judged because {blocked} failed: {reason}", kind)
            else:
                runnable.append(task)
        if not runnable:
            return
        request = build_request(runnable, {**inputs, **result.outputs}, result.language)
        usage = Usage()
        try:
            reply: BaseModel = await self.judge.ask(
                request.system, request.user, request.reply_model, usage, check=request.check
            )
        except Exception as exc:  # the row's tasks fail with the reason; other rows go on
            reason = str(exc) if isinstance(exc, JudgeError) else f"{type(exc).__name__}: {exc}"
            for task in runnable:
                result.failures[task] = (reason, error_kind(exc))
        else:
            result.outputs.update(reply.model_dump())
        readers = sorted({name for task in runnable for name in self.consumers[task]})
        for name in readers:
            result.cost.setdefault(name, Usage()).add(usage, 1 / len(readers))
