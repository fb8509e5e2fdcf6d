"""The scripted model reads free-text prompts in any wording: a judge template gets a score line
and a reason, an answer prompt an extractive answer, and an unreadable prompt a reply with no
score in it (so a 0-5 metric's null says why, never a silent 0)."""

from __future__ import annotations

import pytest

from ragmeter.apps.rag import RAG_ANSWER_TEMPLATES
from ragmeter.metrics import AnswerRelevancyMetric
from ragmeter.metrics.llm.dbgpt import ANSWER_RELEVANCY_TEMPLATES
from ragmeter.testing.answers import answer_chat
from ragmeter.testing.free_text import UNREADABLE, read_prompt, score_scale
from tests.readme_blocks import WALKTHROUGH, heredoc

QUERY = "Which layers make up AWEL?"
CONTEXT = (
    '"What is AWEL?": AWEL is a workflow expression language.\n\n'
    '"What is AWEL?-AWEL Design": AWEL is divided into an operator layer, an AgentFream layer '
    "and a DSL layer."
)
BACKED = "AWEL is divided into an operator layer, an AgentFream layer and a DSL layer."
ANSWER = BACKED + " It was invented by Roman engineers in 1850."


def _chat(prompt: str) -> str:
    return answer_chat({"messages": [{"role": "user", "content": prompt}]})


def test_the_walkthrough_judge_prompt_is_scored_from_word_overlap() -> None:
    template = heredoc("judge.txt", path=WALKTHROUGH)
    reply = _chat(template.format(query=QUERY, context=CONTEXT, answer=ANSWER))
    # 1 of the 2 answer sentences is backed by the context: round(5 * 1/2) = 2
    assert reply == "2\n1 of 2 answer sentences are backed by the context."
    assert _chat(template.format(query=QUERY, context=CONTEXT, answer=BACKED)).startswith("5\n")
    score, feedback = AnswerRelevancyMetric()._parse_evaluate_response(reply)
    assert (score, feedback) == (2.0, "1 of 2 answer sentences are backed by the context.")


def test_the_walkthrough_answer_prompt_gets_an_extractive_answer() -> None:
    template = heredoc("answer.txt", path=WALKTHROUGH)
    parts = read_prompt(template.format(query=QUERY, context=CONTEXT))
    assert parts is not None
    assert (parts.question, parts.context, parts.answer) == (QUERY, CONTEXT, "")
    reply = _chat(template.format(query=QUERY, context=CONTEXT))
    # the passage sentences sharing most words with the question, without chunk header paths
    assert reply == "AWEL is a workflow expression language. " + BACKED
    unknown = _chat(template.format(query="How do I brew oolong?", context=CONTEXT))
    assert unknown == "I do not know."


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_built_in_templates_keep_their_replies(language: str) -> None:
    query = QUERY if language == "en" else "哪些层组成了 AWEL？"
    judged = _chat(
        ANSWER_RELEVANCY_TEMPLATES[language].format(query=query, context=CONTEXT, answer=ANSWER)
    )
    expected = {
        "en": "2\n1 of 2 answer sentences are backed by the context.",
        "zh": "2\n答案中有 1/2 句可由参考内容或问题支持。",
    }
    assert judged == expected[language]
    answered = _chat(RAG_ANSWER_TEMPLATES[language].format(query=query, context=CONTEXT))
    assert "AWEL" in answered and answered != "I do not know."


@pytest.mark.parametrize(
    ("template", "first_line"),
    [
        # unusual labels, the instruction after the answer (tests/integration/test_app_scene.py)
        ("Grade this.\nAsked: {query}\nKnown: {context}\nSaid: {answer}\nScore 0-5 first.\n", "2"),
        # XML tags and a 1-10 scale: 1 + round(9 * 1/2) = 5
        ("Rate the answer on a scale of 1 to 10.\n<question>{query}</question>\n"
         "<context>{context}</context>\n<answer>{answer}</answer>", "5"),
        # bracket labels, a score out of 10: round(10 * 1/2) = 5
        ("Give a score out of 10.\n[Context]\n{context}\n[Question]\n{query}\n[Response]\n{answer}",
         "5"),
        # no passages: sentences are checked against the question alone (0 of 2 here)
        ("Rate 0-5 how polite this answer is.\nQ: {query}\nA: {answer}\nScore on the first line.",
         "0"),
    ],
)  # fmt: skip
def test_judge_templates_in_other_wordings(template: str, first_line: str) -> None:
    reply = _chat(template.format(query=QUERY, context=CONTEXT, answer=ANSWER))
    assert reply.split("\n")[0] == first_line, reply
    assert "answer sentences are backed" in reply


@pytest.mark.parametrize(
    ("text", "scale"),
    [
        ("Score the answer from 0 (unsupported, off the question) to 5 (fully backed)", (0, 5)),
        ("Rate it 1-10.", (1, 10)),
        ("Give a rating between 1 and 3.", (1, 3)),
        ("评分范围 0 到 5：", (0, 5)),
        ("Score it out of 10.", (0, 10)),
        ("Give it a score.", (0, 5)),
        ("Answer accurately from the passages.", None),  # 'accurately' holds no 'rate'
    ],
)
def test_score_scales(text: str, scale: tuple[int, int] | None) -> None:
    assert score_scale(text) == scale


def test_an_unreadable_prompt_gets_no_made_up_score() -> None:
    reply = _chat("Say hello.")
    assert reply == UNREADABLE
    assert not any(ch.isdigit() for ch in reply)
    score, feedback = AnswerRelevancyMetric()._parse_evaluate_response(reply)
    assert score is None and feedback


def test_an_empty_answer_scores_the_bottom_of_the_scale_and_says_so() -> None:
    template = heredoc("judge.txt", path=WALKTHROUGH)
    reply = _chat(template.format(query=QUERY, context=CONTEXT, answer=""))
    assert reply == "0\nThe answer is empty: there is nothing to score."
