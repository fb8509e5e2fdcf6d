"""Repeated judgements combined: the mean score per row and metric, passing by majority,
nulls left out (a row null in every repeat stays null with its reason), the usage summed,
and the rows whose repeats disagree listed; a repeat's judge asks with its own seed."""

from __future__ import annotations

import pytest

from ragmeter.errors import ConfigError
from ragmeter.judge.engine import JudgeEngine, JudgeSettings
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.runs.execution.repeats import combine_repeats, disagreements, seeded


def _report(scores: list[float | None], passing: list[bool | None]) -> EvaluationReport:
    records = [
        ResultRecord(
            row_index=i, metric_name="grade", score=s, passing=p, feedback=f"said {s}",
            error=None if s is not None else "timed out", prediction=None, contexts=None,
            prediction_cost=0, query=f"q{i}", raw_dataset={"query": f"q{i}"},
            error_kind=None if s is not None else "upstream",
        )
        for i, (s, p) in enumerate(zip(scores, passing, strict=True))
    ]  # fmt: skip
    return EvaluationReport(records, ["grade"], len(scores), 1.0, {"requests": 3.0})


def test_repeats_combine_to_the_mean_with_passing_by_majority() -> None:
    reports = [
        _report([1.0, 0.5, None, None], [True, False, None, None]),
        _report([1.0, 1.0, 0.5, None], [True, True, False, None]),
        _report([1.0, 0.0, None, None], [True, False, None, None]),
    ]
    combined = combine_repeats(reports)
    assert combined.scores("grade") == [1.0, 0.5, 0.5, None]
    assert [r.passing for r in combined.results("grade")] == [True, False, False, None]
    null = combined.results("grade")[3]
    assert null.error == "timed out" and null.error_kind == "upstream"
    assert combined.results("grade")[2].error is None  # one repeat scored it
    assert combined.results("grade")[1].details == {
        "values": {"repeat_1": 0.5, "repeat_2": 1.0, "repeat_3": 0.0}
    }
    assert combined.usage == {"requests": 9.0} and combined.seconds == 3.0
    flaky = disagreements(reports)
    assert [(d.row_index, d.scores) for d in flaky] == [
        (1, (0.5, 1.0, 0.0)),
        (2, (None, 0.5, None)),
    ]


def test_one_repeat_is_the_report_itself() -> None:
    report = _report([1.0], [True])
    assert combine_repeats([report]) is report and disagreements([report]) == []


def test_a_repeat_asks_with_its_own_seed_and_the_same_cache() -> None:
    engine = JudgeEngine(JudgeSettings(model="m", base_url="http://127.0.0.1:9/v1"))
    assert seeded(engine, 0) is engine
    again = seeded(engine, 2)
    assert again.settings.seed == 2 and again.settings.model == "m" and again.cache is None
    with pytest.raises(ConfigError, match="--repeats needs a judge model"):
        seeded(object(), 1)
