"""Judged agent metrics through ``evaluate`` against the scripted judge server: each formula on
hand-worked verdicts (the scripted judge's rules are word overlaps, so every verdict below can
be worked out from the conversation), OpenAI and Anthropic conversations scoring the same,
one request per row for all of them (fused), and a null with its reason where a row lacks
what a metric reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import ragmeter
from ragmeter.judge.from_config import judge_from_config
from ragmeter.metrics.llm.agent import topic_adherence
from ragmeter.testing import ScriptedJudgeServer

METRICS = (
    "agent_goal_accuracy,task_completion,topic_adherence,tool_argument_correctness,"
    "conversation_relevancy,knowledge_retention"
)

#: the user asks for Paris's weather; the agent calls the tool with a city the user never
#: named (Rome) and Paris; it answers, then asks again for the city the user gave
OPENAI: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": "Weather forecast for Paris tomorrow"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            {"id": "b", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Rome"}'}},
        ]},
        {"role": "tool", "tool_call_id": "a", "content": "Paris forecast tomorrow: sunny 18C"},
        {"role": "tool", "tool_call_id": "b", "content": "Rome: rain"},
        {"role": "assistant", "content": "Tomorrow Paris weather is sunny, 18C."},
        {"role": "user", "content": "Tell me a joke about cats"},
        {"role": "assistant", "content": "Sorry, I cannot help with jokes."},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "Which city? Paris?"},
    ],
    "reference": "sunny 18C in Paris",
    "reference_topics": ["weather forecast"],
}  # fmt: skip

ANTHROPIC: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": "Weather forecast for Paris tomorrow"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "b", "name": "weather", "input": {"city": "Rome"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a",
             "content": "Paris forecast tomorrow: sunny 18C"},
            {"type": "tool_result", "tool_use_id": "b", "content": "Rome: rain"},
        ]},
        {"role": "assistant", "content": "Tomorrow Paris weather is sunny, 18C."},
        {"role": "user", "content": "Tell me a joke about cats"},
        {"role": "assistant", "content": "Sorry, I cannot help with jokes."},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "Which city? Paris?"},
    ],
    "reference": "sunny 18C in Paris",
    "reference_topics": ["weather forecast"],
}  # fmt: skip


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


def _scores(judge: ScriptedJudgeServer, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    engine = judge_from_config("scripted", base_url=judge.url, cache=False)
    report = ragmeter.evaluate(rows, METRICS, judge=engine)
    return {name: report.scores(name) for name in report.metric_names}


def test_each_formula_on_hand_worked_verdicts(judge: ScriptedJudgeServer) -> None:
    judge.reset()
    scores = _scores(judge, [OPENAI])
    assert judge.snapshot()["chat_requests"] == 2  # every task in two fused requests
    # the end state (tool results + last reply) holds "sunny 18C Paris": reached
    assert scores["agent_goal_accuracy"] == [1.0]
    # task words: weather forecast paris tomorrow; the outcome (tool results and the last
    # reply, "Which city? Paris?") has all but "weather"
    assert scores["task_completion"] == [0.75]
    # topics: the three user messages; "cats" refused; only the weather one is a reference
    # topic: TP = 1 (weather), FP = 1 ("thanks" answered), FN = 0 -> P 0.5, R 1, F1 2/3
    assert scores["topic_adherence"] == [pytest.approx(2 / 3)]
    # the Rome call's value is not in the request: 1 of 2 calls right
    assert scores["tool_argument_correctness"] == [0.5]
    # replies vs the user message before each: on weather yes, jokes no ("sorry..."
    # shares no word with "tell me a joke about cats"), "which city? paris?" no
    assert scores["conversation_relevancy"] == [pytest.approx(1 / 3)]
    # the last reply asks again for Paris, which the user gave: 2 of 3 keep it
    assert scores["knowledge_retention"] == [pytest.approx(2 / 3)]


def test_openai_and_anthropic_conversations_score_the_same(judge: ScriptedJudgeServer) -> None:
    assert _scores(judge, [ANTHROPIC]) == _scores(judge, [OPENAI])


def test_without_a_reference_the_goal_is_the_users_own(judge: ScriptedJudgeServer) -> None:
    row = {key: value for key, value in OPENAI.items() if key != "reference"}
    engine = judge_from_config("scripted", base_url=judge.url, cache=False)
    report = ragmeter.evaluate([row], "agent_goal_accuracy", judge=engine)
    (result,) = report.results("agent_goal_accuracy")
    assert result.score == 1.0 and "user_goal" in (result.feedback or "")
    groups = result.details["groups"]  # type: ignore[index]
    assert (
        groups[0]["kind"] == "goal"
        and groups[0]["items"][0]["text"] == row["messages"][0]["content"]
    )


def test_a_row_lacking_a_field_stops_before_any_request_naming_it(
    judge: ScriptedJudgeServer,
) -> None:
    row = {key: value for key, value in OPENAI.items() if key != "reference_topics"}
    engine = judge_from_config("scripted", base_url=judge.url, cache=False)
    judge.reset()
    with pytest.raises(ragmeter.RagmeterError, match=r"row 1.*reference_topics"):
        ragmeter.evaluate([OPENAI, row], "topic_adherence,conversation_relevancy", judge=engine)
    with pytest.raises(ragmeter.RagmeterError, match=r"row 0.*messages"):
        ragmeter.evaluate([{"query": "q", "response": "r"}], "knowledge_retention", judge=engine)
    assert judge.snapshot().get("chat_requests", 0) == 0


@pytest.mark.parametrize(
    ("refused", "inside", "mode", "expected"),
    [
        ([False, False, True], [True, False, True], "precision", 0.5),
        ([False, False, True], [True, False, True], "recall", 0.5),
        ([False, False, True], [True, False, True], "f1", 0.5),
        ([True, True], [True, True], "f1", 0.0),  # nothing answered: RAGAS's 0
        ([False], [True], "f1", 1.0),
        ([False, False], [True, False], "recall", 1.0),
    ],
)
def test_topic_adherence_by_hand(
    refused: list[bool], inside: list[bool], mode: Any, expected: float
) -> None:
    assert topic_adherence(refused, inside, mode) == pytest.approx(expected)


def test_a_bad_topic_mode_is_refused() -> None:
    with pytest.raises(ragmeter.RagmeterError, match="f1, precision or recall"):
        ragmeter.evaluate([OPENAI], "topic_adherence(mode=accuracy)")
