"""``--require-card`` rules: parsed or refused naming what is wrong, and checked against a
card's overall statistic (``kappa`` is Cohen's on a pass/fail suite, the weighted one on a
graded suite); the headline a gate and report show."""

from __future__ import annotations

from typing import Any

import pytest

from ragmeter.errors import ConfigError
from ragmeter.runs.cards import check_requirement, headline, parse_requirement


def _card(name: str, value: float | None, suite: str = "ragtruth") -> dict[str, Any]:
    stat = {"name": name, "value": value, "low": 0.33, "high": 0.49, "n": 817, "note": None}
    return {"suite": {"name": suite}, "agreement": {"all": {"statistics": [stat]}}}


def test_rules_parse_and_refuse() -> None:
    rule = parse_requirement(" faithfulness : kappa >= 0.6 ")
    assert (rule.metric, rule.statistic, rule.op, rule.value) == (
        "faithfulness",
        "kappa",
        ">=",
        0.6,
    )
    assert parse_requirement("answer_relevancy_0_5:f1<0.9").op == "<"
    for text, said in (
        ("faithfulness kappa>=0.6", "expected METRIC:STATISTIC>=VALUE"),
        ("faithfulness:kapa>=0.6", "unknown statistic 'kapa'"),
        ("faithfulness:kappa>=high", "expected METRIC:STATISTIC>=VALUE"),
        ("faithfulness:kappa>=1.2.3", "is not a number"),
    ):
        with pytest.raises(ConfigError, match=said):
            parse_requirement(text)


def test_rules_check_cards() -> None:
    rule = parse_requirement("faithfulness:kappa>=0.4")
    assert check_requirement(rule, _card("cohen_kappa", 0.41), "m") is None
    assert "kappa is 0.390" in str(check_requirement(rule, _card("cohen_kappa", 0.39), "m"))
    assert check_requirement(rule, _card("weighted_kappa", 0.5, "trec_rag"), "m") is None
    assert "no judge card of judge 'm'" in str(check_requirement(rule, None, "m"))
    assert "names no judge model" in str(check_requirement(rule, None, None))
    assert "has no kappa value" in str(check_requirement(rule, _card("cohen_kappa", None), "m"))
    strict = parse_requirement("faithfulness:kappa>0.41")
    assert check_requirement(strict, _card("cohen_kappa", 0.41), "m") is not None


def test_headline() -> None:
    assert (
        headline(_card("cohen_kappa", 0.41)) == "judge card: κ 0.41 [0.33, 0.49], n 817, ragtruth"
    )
    graded = headline(_card("weighted_kappa", 0.492, "trec_rag"), prefix="")
    assert graded == "weighted κ 0.49 [0.33, 0.49], n 817, trec_rag"
