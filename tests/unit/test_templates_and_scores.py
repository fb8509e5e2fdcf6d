"""Templates hold plain fields only and render without ``str.format``; DB-GPT's 0-5 score is
read from the replies judges really write."""

from __future__ import annotations

from typing import Any

import pytest

from ragmeter.apps.rag import RagApp
from ragmeter.errors import ConfigError, LimitError, MetricError
from ragmeter.metrics.base import LLMEvaluationMetric
from ragmeter.metrics.llm.dbgpt import AnswerRelevancyMetric, parse_score_0_5
from ragmeter.metrics.registry import create_metric
from ragmeter.prompts.templates import check_template, render_template, template_fields
from ragmeter.runs.planning.scoring import resolve_metrics

#: (template, what the refusal says)
AMPLIFYING = [
    ("{query:>100000000}", "format specs"),
    ("{query:{context}}", "format specs"),
    ("{query!r}", "conversions ('!r')"),
    ("{query!s:>9}", "conversions"),
    ("{query.__class__}", "attribute and index access"),
    ("{query[0]}", "attribute and index access"),
    ("{}", "needs a name"),
    ("{0}", "starts with a letter"),
]


def test_render_substitutes_plain_fields_and_keeps_doubled_braces() -> None:
    values = {"query": "{context:>99}", "context": "C"}
    # a value is inserted as it is: braces inside it are never read as fields
    assert render_template("Q={query} C={context} {{json}}", values) == "Q={context:>99} C=C {json}"
    assert render_template("no fields", {}) == "no fields"


@pytest.mark.parametrize(("template", "says"), AMPLIFYING)
def test_render_refuses_every_field_that_is_not_plain(template: str, says: str) -> None:
    with pytest.raises(ConfigError, match="template field") as caught:
        render_template(f"Q: {template}", {"query": "q", "context": "c"})
    assert says in str(caught.value)


def test_render_names_a_field_it_cannot_fill() -> None:
    with pytest.raises(ConfigError, match=r"\{answer\} has no value"):
        render_template("{query} {answer}", {"query": "q"})
    with pytest.raises(ConfigError, match="does not parse"):
        render_template("{query", {"query": "q"})


def test_a_repeated_field_is_refused_on_entry_but_an_old_stored_template_still_renders() -> None:
    """Templates stored before fields were limited to one use keep working; what they render
    is bounded by the judge's prompt cap, measured before the prompt is built."""
    old = "Q: {query}\nC: {context}\nA: {answer}\nAgain, the question: {query}"
    with pytest.raises(ConfigError, match=r"\{query\} appears more than once"):
        check_template(old, "judge")
    values = {"query": "q", "context": "c", "answer": "a"}
    assert render_template(old, values).endswith("Again, the question: q")
    copies = "{query}{answer}" + "{context}" * 11_108
    with pytest.raises(LimitError, match="1,000,000 characters per judge prompt"):
        render_template(copies, {**values, "context": "x" * 20_000})  # 222 MB if built


@pytest.mark.parametrize(("template", "says"), AMPLIFYING)
def test_stored_prompts_refuse_fields_that_are_not_plain(template: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        check_template(f"{template} {{query}} {{context}} {{answer}}", "judge")
    with pytest.raises(ConfigError, match="template field"):
        template_fields(template)


@pytest.mark.parametrize(("template", "says"), AMPLIFYING)
def test_metric_templates_from_parameters_are_refused(template: str, says: str) -> None:
    with pytest.raises(MetricError, match="AnswerRelevancyMetric prompt_template") as caught:
        create_metric(f"AnswerRelevancyMetric(prompt_template={template})")
    assert says in str(caught.value)
    with pytest.raises(MetricError, match="template field"):
        AnswerRelevancyMetric(prompt_template=template)


def test_metric_templates_may_only_use_the_fields_format_prompt_fills() -> None:
    with pytest.raises(MetricError, match=r"uses \{oops\}"):
        AnswerRelevancyMetric(prompt_template="{query} {oops}")
    metric = AnswerRelevancyMetric(prompt_template="Q {query}\nA {answer}")  # a subset is fine
    assert (
        metric.format_prompt("the answer", ["c"], "the question") == "Q the question\nA the answer"
    )


class _ClassLevelTemplate(LLMEvaluationMetric):
    """A user's metric whose class carries an amplifying template."""

    prompt_template = "{answer:>100000000}"

    def _parse_evaluate_response(self, response: str) -> Any:
        return 1.0


class _OwnFields(LLMEvaluationMetric):
    """A user's metric with its own format_prompt may name its own plain fields."""

    prompt_template = "Rubric {rubric}: {answer}"

    def format_prompt(
        self, prediction: str, contexts: Any, query: str | None, language: str = "en"
    ) -> str:
        return render_template(self.template(language), {"rubric": "r", "answer": prediction})

    def _parse_evaluate_response(self, response: str) -> Any:
        return 1.0


def test_a_class_level_template_is_checked_when_the_metric_is_resolved() -> None:
    with pytest.raises(MetricError, match=r"_ClassLevelTemplate prompt_template: .*format specs"):
        resolve_metrics([_ClassLevelTemplate])
    assert resolve_metrics([_OwnFields])[0].format_prompt("a", None, None) == "Rubric r: a"


def test_an_unchecked_template_still_cannot_amplify() -> None:
    metric = AnswerRelevancyMetric()
    metric.prompt_template = "{query:>100000000}"  # set after construction, never checked
    with pytest.raises(ConfigError, match="format specs"):
        metric.format_prompt("a", ["c"], "q")
    app = RagApp("bot", None, None, prompt_template="{query!r} {context}")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="conversions"):
        app.prompt("q", ["c"])
    plain = RagApp("bot", None, None, prompt_template="{context}|{query}")  # type: ignore[arg-type]
    assert plain.prompt("q", ["c1", "c2"]) == "c1\n\nc2|q"


#: real-world judge replies -> (score, feedback)
REPLIES: list[tuple[str, float | None, str | None]] = [
    ("4", 4.0, None),
    ("4.0", 4.0, None),
    ("4.5", 4.5, None),
    ("**4**", 4.0, None),
    ("Score: 4", 4.0, None),
    ("Score (0-5): 4", 4.0, None),
    ("**Score:** 4/5", 4.0, None),
    ("4/5", 4.0, None),
    ("Rating: 3 out of 5", 3.0, None),
    ("Overall rating - 4 out of five", 4.0, None),
    ("Final score: 5/5.", 5.0, None),
    ("- Score: 2", 2.0, None),
    ("Score: 4.5", 4.5, None),
    ("评分：4", 4.0, None),
    ("评分（0-5）：4", 4.0, None),
    ("得分：4分", 4.0, None),
    ("4分", 4.0, None),
    ("４", 4.0, None),  # a full-width digit
    ("0~5分，得分：2", 2.0, None),
    ("我给这个回答打4分，因为它基本正确", 4.0, None),
    (
        "4\nThe answer is correct.\nIt misses one detail.",
        4.0,
        "The answer is correct.\nIt misses one detail.",
    ),
    ("5 - complete and correct", 5.0, None),
    ("分数：3\n理由：部分回答了问题", 3.0, "理由：部分回答了问题"),
    ("The answer is mostly right.\nScore: 3", 3.0, "The answer is mostly right."),
    ("It names 2 of the 3 steps.\n\nScore: 3", 3.0, "It names 2 of the 3 steps."),
    ("The answer is relevant.\n\n4", 4.0, "The answer is relevant."),
    ("0", 0.0, None),
]

#: replies with no usable score -> what the reason says
NO_SCORE: list[tuple[str, str]] = [
    ("", "empty"),
    ("I cannot judge this answer.", "no 0-5 score"),
    ("It takes 3分钟 to read.\nNo verdict.", "no 0-5 score"),
    ("Score: 7", "outside 0-5"),
    ("Score: -1", "outside 0-5"),
    ("Score: 8/10", "not on the 0-5 scale"),
    ("Rating: 4 out of 10", "not on the 0-5 scale"),
]


@pytest.mark.parametrize(("reply", "score", "feedback"), REPLIES)
def test_scores_are_read_from_real_replies(
    reply: str, score: float | None, feedback: str | None
) -> None:
    assert parse_score_0_5(reply) == (score, feedback)


@pytest.mark.parametrize(("reply", "says"), NO_SCORE)
def test_a_reply_without_a_score_is_a_null_with_the_reason(reply: str, says: str) -> None:
    score, reason = parse_score_0_5(reply)
    assert score is None and reason is not None and says in reason


def test_the_metric_turns_replies_into_results() -> None:
    metric = AnswerRelevancyMetric()
    result = metric._result("Score (0-5): 4\nGood.", "answer", ["c"])
    assert (result.score, result.passing, result.feedback) == (4.0, True, "Good.")
    missing = metric._result("no verdict", "answer", ["c"])
    assert missing.score is None and missing.passing is None
    assert missing.feedback is not None and "no 0-5 score" in missing.feedback
