"""Judged metrics of agents and conversations: goal accuracy, task completion, topic adherence,
tool argument correctness, conversation relevancy and knowledge retention.

They read a row's ``messages`` (a conversation in OpenAI's chat form, tool calls and results
included) through judge tasks of the evaluation's task plan (``ragmeter.judge.tasks``), so a
row's tasks for several of these metrics go to the judge in one request (fused plan)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ragmeter.datasets import Row
from ragmeter.errors import ConfigError
from ragmeter.judge.plan import RowJudgement
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.llm.ragas import PlannedMetric, ScoreOutcome, _misses, _ratio
from ragmeter.metrics.registry import register_metric
from ragmeter.reports.details import details, group, item, verdict_items

__all__ = [
    "AgentGoalAccuracyMetric",
    "ConversationRelevancyMetric",
    "KnowledgeRetentionMetric",
    "TaskCompletionMetric",
    "ToolArgumentCorrectnessMetric",
    "TopicAdherenceMetric",
    "topic_adherence",
]

TopicMode = Literal["f1", "precision", "recall"]


@register_metric("agent_goal_accuracy", aliases=("AgentGoalAccuracy",))
class AgentGoalAccuracyMetric(PlannedMetric):
    """AgentGoalAccuracy = 1 when the conversation's end state is the desired outcome, else 0.

    The judge states the user's goal and the end state the conversation reached (tool results
    included). With a ``reference`` on the row, the end state is compared with it (RAGAS's
    AgentGoalAccuracyWithReference); without one, with the goal the judge inferred
    (AgentGoalAccuracyWithoutReference). One request per row, where RAGAS makes two."""

    tasks = ("goal",)
    needs = ("messages",)

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        goal, end = judged.outputs["user_goal"], judged.outputs["end_state"]
        verdict = judged.outputs["goal_reached"]
        against = "reference" if row.reference is not None else "user_goal"
        reasoning = details(
            group(
                "goal",
                [
                    item(goal, reason="user goal"),
                    item(end, bool(verdict["verdict"]), verdict.get("reason")),
                ],
            ),
            values={"against_reference": int(row.reference is not None)},
        )
        reached = "reached" if verdict["verdict"] else "not reached"
        feedback = f"{reached} (end state against the {against}): {verdict.get('reason') or ''}"
        return float(bool(verdict["verdict"])), feedback.strip().rstrip(":"), reasoning


@register_metric("task_completion", aliases=("TaskCompletion", "TaskCompletionMetric"))
class TaskCompletionMetric(PlannedMetric):
    """TaskCompletion = the judge's 0-1 rating of how completely and correctly the outcome of
    the conversation (the agent's answers and tool results) does the task the user gave, after
    stating both (as DeepEval's TaskCompletionMetric)."""

    tasks = ("task_outcome",)
    needs = ("messages",)

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        out = judged.outputs
        value = float(out["task_completion"])
        reasoning = details(
            group("task", [item(out["task"], reason="task"), item(out["outcome"], value=value)]),
        )
        return value, f"task: {out['task'][:120]} | outcome: {out['outcome'][:120]}", reasoning


def topic_adherence(
    refused: Sequence[bool], in_reference: Sequence[bool], mode: TopicMode = "f1"
) -> float:
    """RAGAS's TopicAdherenceScore from per-topic flags. A topic is answered when the AI did
    not refuse it; TP = answered and in the reference topics, FP = answered and not in them,
    FN = refused and in them. precision = TP / (TP + FP), recall = TP / (TP + FN),
    F1 = 2PR / (P + R); each 0 where its denominator is 0 (RAGAS: the same, up to its 1e-10)."""
    answered = [not r for r in refused]
    tp = sum(a and i for a, i in zip(answered, in_reference, strict=True))
    fp = sum(a and not i for a, i in zip(answered, in_reference, strict=True))
    fn = sum(not a and i for a, i in zip(answered, in_reference, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    if mode == "precision":
        return precision
    if mode == "recall":
        return recall
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@register_metric("topic_adherence", aliases=("TopicAdherence", "TopicAdherenceScore"))
class TopicAdherenceMetric(PlannedMetric):
    """TopicAdherence = F1 (or precision, recall: ``mode``) of the topics the agent answered
    against the row's ``reference_topics``.

    The judge lists the topics the user raised, says of each whether the AI refused it and
    whether it falls under a reference topic; the score is ``topic_adherence`` of those flags
    (see its formula): an agent that answers on its topics and declines the rest scores 1."""

    tasks = ("topics", "topic_refused", "topic_in_reference")
    needs = ("messages", "reference_topics")

    def __init__(self, mode: str = "f1") -> None:
        super().__init__()
        if mode not in ("f1", "precision", "recall"):
            raise ConfigError(f"topic_adherence mode must be f1, precision or recall, not {mode!r}")
        self.mode: TopicMode = mode  # type: ignore[assignment]

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        topics = judged.outputs["topics"]
        refused, inside = judged.outputs["topic_refused"], judged.outputs["topic_in_reference"]
        reasoning = details(
            group("topics_refused", verdict_items(topics, refused)),
            group("topics_in_reference", verdict_items(topics, inside)),
        )
        if not topics:
            return None, "the judge found no topic in the conversation", reasoning
        flags_refused = [bool(v["verdict"]) for v in refused]
        flags_inside = [bool(v["verdict"]) for v in inside]
        value = topic_adherence(flags_refused, flags_inside, self.mode)
        answered = [t for t, r in zip(topics, flags_refused, strict=True) if not r]
        off = [t for t, i in zip(topics, flags_inside, strict=True) if not i]
        feedback = f"answered: {answered} · outside the reference topics: {off}"
        reasoning["values"] = {"f1": topic_adherence(flags_refused, flags_inside)}
        return value, feedback, reasoning


@register_metric("tool_argument_correctness", aliases=("ToolArgumentCorrectness",))
class ToolArgumentCorrectnessMetric(PlannedMetric):
    """ToolArgumentCorrectness = tool calls whose arguments the judge finds right / tool calls
    made. Right: they fit what the user asked and the tool's parameters in the row's
    ``available_tools`` (when given), with no value missing, wrong or made up."""

    tasks = ("tool_arguments",)
    needs = ("messages",)

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        calls = [
            f"{c.name}({_arguments(c.arguments)})" for m in row.messages or () for c in m.tool_calls
        ]
        verdicts = judged.outputs["tool_arguments"]
        reasoning = details(group("tool_calls", verdict_items(calls, verdicts)))
        if not calls:
            return None, "the conversation has no tool calls to check", reasoning
        missed = _misses(calls, verdicts, chars=80)
        return _ratio(verdicts), (f"wrong arguments: {missed}" if missed else ""), reasoning


def _arguments(arguments: Any) -> str:
    import json

    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


class _TurnMetric(PlannedMetric):
    """A share of the assistant's replies (those with text) that the judge approves."""

    needs = ("messages",)
    what = ""

    async def score(self, row: Row, judged: RowJudgement, ctx: EvaluationContext) -> ScoreOutcome:
        turns = [m.content for m in row.messages or () if m.role == "assistant" and m.content]
        verdicts = judged.outputs[self.tasks[0]]
        reasoning = details(group("turns", verdict_items(turns, verdicts)))
        if not turns:
            return None, "the conversation has no assistant reply with text", reasoning
        missed = _misses(turns, verdicts, chars=80)
        return _ratio(verdicts), (f"{self.what}: {missed}" if missed else ""), reasoning


@register_metric("conversation_relevancy", aliases=("ConversationRelevancy",))
class ConversationRelevancyMetric(_TurnMetric):
    """ConversationRelevancy = assistant replies relevant to what the user said in the turns
    just before them / assistant replies (as DeepEval's ConversationRelevancyMetric)."""

    tasks = ("turn_relevance",)
    what = "not relevant"


@register_metric("knowledge_retention", aliases=("KnowledgeRetention",))
class KnowledgeRetentionMetric(_TurnMetric):
    """KnowledgeRetention = assistant replies that keep what the user already said (never
    asking for it again nor contradicting it) / assistant replies (as DeepEval's
    KnowledgeRetentionMetric: 1 minus the share of replies with attrition)."""

    tasks = ("knowledge_retention",)
    what = "forgets what the user said"
