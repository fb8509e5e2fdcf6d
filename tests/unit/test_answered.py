"""``answered``: a reference-free check (a letter or digit in the response, any script),
by hand-made rows, Hypothesis invariants, and on what a production trace becomes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragmeter
from ragmeter.config import OnlineRule, Settings
from ragmeter.runs.online import score_traces
from ragmeter.traces import SpanRecord
from ragmeter.traces.conventions import trace_of


def _scores(responses: list[str]) -> list[float | None]:
    rows = [{"query": "q", "response": r} for r in responses]
    report = ragmeter.evaluate(rows, ["answered"])
    return report.scores("answered")


@pytest.mark.parametrize(
    ("response", "expected"),
    [("Paris.", 1.0), ("  ...  ", 0.0), ("", 0.0), ("巴黎。", 1.0), ("42", 1.0), ("?!", 0.0)],
)
def test_hand_made_rows(response: str, expected: float) -> None:
    assert _scores([response]) == [expected]


@given(st.lists(st.text(max_size=40), min_size=1, max_size=8))
def test_scores_are_zero_or_one_and_follow_the_text(responses: list[str]) -> None:
    scores = _scores(responses)
    assert scores == [1.0 if any(c.isalnum() for c in r) else 0.0 for r in responses]


def test_an_online_rule_scores_every_trace_without_a_reference(tmp_path: Path) -> None:
    def root(trace: int, answer: str) -> SpanRecord:
        return SpanRecord(
            trace_id=f"{trace:032x}", span_id=f"{1:016x}", parent_id=None, name="chat",
            kind="CHAIN", start_ns=1, end_ns=2, status="ok",
            attributes={"input.value": "Where is Lyon?", "output.value": answer},
        )  # fmt: skip

    traces = [trace_of([root(1, "Lyon lies in France.")]), trace_of([root(2, "   ")])]
    rule = OnlineRule(name="every-trace", metrics=("answered",))
    settings = Settings.model_validate({"store": {"url": f"sqlite:///{tmp_path / 'r.db'}"}})
    scores = score_traces(traces, [rule], settings)
    assert [(s.trace_id[-1], s.score) for s in scores] == [("1", 1.0), ("2", 0.0)]
    assert all(s.rule == "every-trace" and s.tokens == 0 for s in scores)
