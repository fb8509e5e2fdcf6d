"""Prompt variable checks, how app replies are read, and rows failed by a target."""

from __future__ import annotations

import pytest

import ragmeter
from ragmeter.apps import AppAnswer, AppError, CallableApp, as_answer
from ragmeter.apps.http import MISSING, dig
from ragmeter.errors import ConfigError
from ragmeter.prompts.templates import check_template, template_fields
from ragmeter.runs.planning.targets import AppTarget


def test_judge_templates_need_query_context_and_answer() -> None:
    check_template("Q: {query}\nC: {context}\nA: {answer}\nScore 0-5.", "judge")
    with pytest.raises(ConfigError, match=r"lacks \{answer\}"):
        check_template("Q: {query}\nC: {context}", "judge")
    with pytest.raises(ConfigError, match=r"uses \{question\}"):
        check_template("{question} {query} {context} {answer}", "judge")
    with pytest.raises(ConfigError, match="does not parse"):
        check_template("{query} {context} {answer} }", "judge")
    # literal braces are written twice and are not variables
    check_template('Reply as {{"score": n}}: {query} {context} {answer}', "judge")
    assert template_fields('{{"a": 1}} {query}') == ["query"]


def test_answer_templates_must_not_use_answer() -> None:
    check_template("{context}\n\nQuestion: {query}", "answer")
    with pytest.raises(ConfigError, match=r"uses \{answer\}"):
        check_template("{context} {query} {answer}", "answer")
    with pytest.raises(ConfigError, match="unknown prompt kind"):
        check_template("{query}", "other")


def test_app_replies_in_every_natural_shape() -> None:
    assert as_answer("plain") == AppAnswer("plain")
    assert as_answer(("a", ["c1", "c2"])) == AppAnswer("a", ["c1", "c2"])
    assert as_answer({"response": "a", "contexts": [{"content": "c"}, "d"]}) == AppAnswer(
        "a", ["c", "d"]
    )
    with pytest.raises(AppError, match="without a string 'answer'"):
        as_answer({"contexts": []})
    with pytest.raises(AppError, match="returned int"):
        as_answer(3)


def test_dig_follows_dotted_paths() -> None:
    data = {"data": {"answer": "x", "docs": [{"text": "t"}]}}
    assert dig(data, "data.answer") == "x"
    assert dig(data, "data.docs.0.text") == "t"
    assert dig(data, "data.missing") is MISSING


def test_a_failing_app_row_is_data_and_the_others_are_scored() -> None:
    def app(query: str) -> tuple[str, list[str]]:
        if "boom" in query:
            raise RuntimeError("the backend is down")
        return f"{query} answer", [f"{query} answer"]

    rows = [{"query": "ok one", "reference_contexts": ["ok one answer"]}, {"query": "boom"}]
    rows[1]["reference_contexts"] = ["x"]
    report = ragmeter.evaluate(rows, "hit_rate", target=AppTarget(CallableApp(app, name="mine")))
    scores = report.scores("hit_rate")
    assert scores == [1.0, None]
    (failed,) = report.errors()
    assert failed.error == "app 'mine' failed: RuntimeError: the backend is down"
    assert report.target == "mine"


def test_a_plain_function_is_an_app() -> None:
    async def echo(query: str) -> dict[str, object]:
        return {"answer": query.upper(), "contexts": [query.upper()]}

    report = ragmeter.evaluate(
        [{"query": "ok", "reference_contexts": ["OK"]}], "hit_rate", app=echo
    )
    assert report.scores("hit_rate") == [1.0]
    assert report.target == "echo"
    with pytest.raises(ConfigError, match="give one of target, space or app"):
        ragmeter.evaluate(
            [{"query": "q"}], "hit_rate", app=echo, target=AppTarget(CallableApp(echo))
        )
