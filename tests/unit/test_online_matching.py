"""Online rules: which traces they take (matching), which of those they judge (sampling by
trace id hash) and what a rule may say (the rule model's checks)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from pydantic import ValidationError

from ragmeter.config import OnlineRule, Settings
from ragmeter.errors import ConfigError, MetricError
from ragmeter.runs.online import check_rule, matches, sample_point, sampled
from ragmeter.traces import SpanRecord, TraceRecord


def _trace(**changes: Any) -> TraceRecord:
    values: dict[str, Any] = {
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "name": "chat",
        "service": "shop-bot",
        "start_ns": 1_000_000_000,
        "end_ns": 1_250_000_000,
        "status": "ok",
        "complete": True,
        "row": {
            "query": "where is my order?",
            "response": "in transit",
            "metadata": {"env": "prod", "tier": 2},
        },
        "model": "gpt-4o-mini",
        "input_tokens": 120,
    }
    return TraceRecord(**{**values, **changes})


def _span(kind: str = "LLM", **attributes: Any) -> SpanRecord:
    return SpanRecord(
        trace_id="0af7651916cd43dd8448eb211c80319c", span_id="b7ad6b7169203331", parent_id=None,
        name="llm", kind=kind, start_ns=1, end_ns=2, status="ok", attributes=attributes,
        resource={"service.name": "shop-bot", "deployment.environment": "prod"},
    )  # fmt: skip


def _rule(**changes: Any) -> OnlineRule:
    return OnlineRule.model_validate({"name": "r", "metrics": ["hit_rate"], **changes})


def test_service_root_name_and_span_kind_must_all_hold() -> None:
    spans = [_span("RETRIEVER"), _span("llm")]
    assert matches(_rule(service="shop-bot", root_name="chat", span_kind="LLM"), _trace(), spans)
    assert not matches(_rule(service="other"), _trace(), spans)
    assert not matches(_rule(root_name="search"), _trace(), spans)
    assert not matches(_rule(span_kind="TOOL"), _trace(), spans)
    assert not matches(_rule(service="shop-bot"), _trace(service=None), spans)


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"field": "metadata.env", "value": "prod"}, True),
        ({"field": "metadata.env", "value": "dev"}, False),
        ({"field": "metadata.env", "op": "ne", "value": "dev"}, True),
        ({"field": "metadata.absent", "op": "ne", "value": "dev"}, True),
        ({"field": "metadata.tier", "op": "ge", "value": 2}, True),
        ({"field": "metadata.tier", "op": "gt", "value": 2}, False),
        ({"field": "metadata.env", "op": "gt", "value": 2}, False),  # text is no number
        ({"field": "latency_ms", "op": "lt", "value": 300}, True),
        ({"field": "latency_ms", "op": "le", "value": 100}, False),
        ({"field": "model", "op": "in", "value": ["gpt-4o", "gpt-4o-mini"]}, True),
        ({"field": "row.query", "op": "contains", "value": "order"}, True),
        ({"field": "row.response", "op": "contains", "value": "order"}, False),
        ({"field": "user_id", "op": "exists"}, False),
        ({"field": "input_tokens", "op": "exists"}, True),
        ({"field": "span.llm.model_name", "value": "gpt-4o-mini"}, True),
        ({"field": "span.tags", "op": "contains", "value": "beta"}, True),
        ({"field": "resource.deployment.environment", "value": "prod"}, True),
        ({"field": "resource.deployment.environment", "value": "staging"}, False),
    ],
)
def test_filters(condition: dict[str, Any], expected: bool) -> None:
    spans = [_span("LLM", **{"llm.model_name": "gpt-4o-mini", "tags": ["beta", "eu"]})]
    assert matches(_rule(filters=[condition]), _trace(), spans) is expected


def test_all_filters_must_hold() -> None:
    both = [{"field": "metadata.env", "value": "prod"}, {"field": "status", "value": "error"}]
    assert not matches(_rule(filters=both), _trace(), [])
    assert matches(_rule(filters=both), _trace(status="error"), [])


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ({"field": "x", "op": "exists", "value": 1}, "takes no value"),
        ({"field": "x", "op": "in", "value": "a"}, "takes a list"),
        ({"field": "x", "op": "gt", "value": "3"}, "takes a number"),
        ({"field": "x", "op": "gt", "value": True}, "takes a number"),
        ({"field": "x", "op": "eq"}, "takes one value"),
        ({"field": "x", "op": "regex", "value": "a"}, "Input should be"),
    ],
)
def test_a_filter_that_cannot_be_read_is_refused(condition: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _rule(filters=[condition])


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"sample_rate": 1.5}, "sample_rate"),
        ({"sample_rate": -0.1}, "sample_rate"),
        ({"max_requests_per_day": -1}, "max_requests_per_day"),
        ({"delay_seconds": 86_401}, "delay_seconds"),
        ({"name": "a b"}, "name"),
        ({"metrics": []}, "metrics"),
    ],
)
def test_rule_ranges(changes: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError, match=where):
        _rule(**changes)


def test_rules_come_from_the_online_section() -> None:
    settings = Settings.model_validate(
        {"online": {"rules": [{"name": "prod", "metrics": ["hit_rate"], "sample_rate": 0.1}]}}
    )
    assert settings.online.rules[0].sample_rate == 0.1


def test_check_rule_names_what_is_wrong() -> None:
    settings = Settings.model_validate(
        {"models": {"judge": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}}
    )
    assert [m.metric_name for m in check_rule(_rule(metrics=["mrr@10"]), settings)] == ["mrr@10"]
    with pytest.raises(MetricError, match="nosuch"):
        check_rule(_rule(metrics=["nosuch"]), settings)
    with pytest.raises(ConfigError, match="faithfulness need a judge"):
        check_rule(_rule(metrics=["faithfulness"]), settings)
    with pytest.raises(ConfigError, match="unknown model 'other'"):
        check_rule(_rule(metrics=["faithfulness"], judge="other"), settings)
    with pytest.raises(ConfigError, match="unknown filter field 'colour'"):
        check_rule(_rule(filters=[{"field": "colour", "value": "red"}]), settings)
    check_rule(_rule(metrics=["faithfulness"], judge="judge"), settings)


def _ids(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(128):032x}" for _ in range(n)]


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.5, 0.9])
def test_sampling_takes_its_share_within_binomial_bounds(rate: float) -> None:
    ids = _ids(10_000)
    taken = sum(sampled(rate, i) for i in ids)
    sd = math.sqrt(10_000 * rate * (1 - rate))
    assert abs(taken - 10_000 * rate) <= 4.5 * sd  # fails by chance about once in 150,000


def test_sampling_is_decided_by_the_trace_id_alone() -> None:
    ids = _ids(2_000, seed=3)
    first = [sampled(0.2, i) for i in ids]
    assert first == [sampled(0.2, i) for i in ids]  # a re-run (another replica) agrees
    assert [sampled(0.2, i.upper()) for i in ids] == first  # hex case does not matter
    wider = [sampled(0.4, i) for i in ids]
    assert all(w for f, w in zip(first, wider, strict=True) if f)  # 20% is inside 40%
    assert not any(sampled(0.0, i) for i in ids)
    assert all(sampled(1.0, i) for i in ids)
    assert min(map(sample_point, ids)) >= 0.0 and max(map(sample_point, ids)) < 1.0
