"""Pure parts of the service: bind checks, upload names, request checks."""

from __future__ import annotations

import pytest

from ragmeter.config import ServerConfig, Settings
from ragmeter.errors import ConfigError
from ragmeter.runs.planning.config import EvaluationConfig, SpaceTargetConfig
from ragmeter.runs.planning.request import EvaluateServeRequest, config_from_request
from ragmeter.service import check_bind
from ragmeter.service.envelope import ApiError
from ragmeter.service.server import is_loopback
from ragmeter.service.uploads import safe_name


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.5.0.1", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("0.0.0.0", False), ("::", False), ("192.168.1.5", False),
     ("example.com", False)],
)  # fmt: skip
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_bind_needs_keys_beyond_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGMETER_API_KEYS", raising=False)
    open_settings = Settings()
    check_bind("127.0.0.1", open_settings, False)
    check_bind("0.0.0.0", open_settings, True)
    with pytest.raises(ConfigError, match="api_keys"):
        check_bind("0.0.0.0", open_settings, False)
    check_bind("0.0.0.0", Settings(server=ServerConfig(api_keys=["k"])), False)
    monkeypatch.setenv("RAGMETER_API_KEYS", " a, b ,,")
    assert Settings().server.keys() == ["a", "b"]
    check_bind("0.0.0.0", Settings(), False)


@pytest.mark.parametrize("name", ["awel.md", "en/awel.md", "a b/c-d_e.MD", "文档/说明.md"])
def test_safe_names_pass(name: str) -> None:
    assert safe_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", "  ", "../awel.md", "a/../../b.md", "/etc/passwd", "a\\b.md", "C:/x.md", "./a.md",
     "a//b.md", "a/", "a\x00.md", "line\nbreak.md"],
)  # fmt: skip
def test_unsafe_names_are_refused(name: str) -> None:
    with pytest.raises(ApiError) as err:
        safe_name(name)
    assert err.value.status == 400


def test_spec_defaults_and_string_numbers() -> None:
    config = config_from_request(
        EvaluateServeRequest(
            scene_key="recall",
            scene_value=" 3 ",
            evaluate_metrics=["RetrieverMRRMetric", " "],
            context={"top_k": "7", "retriever": "hybrid"},
        )
    )
    target = config.target
    assert isinstance(target, SpaceTargetConfig)
    assert (config.scene_value, config.metrics, config.top_k, target.retriever, target.top_k) == (
        "3", ("RetrieverMRRMetric",), 7, "hybrid", 7,
    )  # fmt: skip
    assert config.concurrency == 8 and config.judge is None
    # a run keeps the config; runs stored before it (a flat spec) read into the same config
    assert EvaluationConfig.from_stored(config.stored()) == config
    flat = {"scene": "recall", "scene_value": "3", "metrics": ["RetrieverMRRMetric"], "top_k": 7,
            "retriever": "hybrid", "parallel_num": 8, "metric_names": ["RetrieverMRRMetric"]}  # fmt: skip
    assert EvaluationConfig.from_stored(flat) == config


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"scene_key": "recall"}, "scene_value is required"),
        ({"scene_key": "app", "scene_value": ""}, "scene_value is required"),
        ({"scene_key": "dataset", "context": {"top_k": 0}}, "context.top_k must be at least 1"),
        ({"scene_key": "dataset", "context": {"top_k": True}}, "context.top_k must be an integer"),
        ({"scene_key": "dataset", "context": {"model": 3}}, "context.model must be"),
        ({"scene_key": "dataset", "context": {"plan": "x"}}, "context.plan must be one of"),
        ({"scene_key": "dataset", "context": {"retriever": "x"}}, "context.retriever must be"),
        ({"scene_key": "dataset", "parallel_num": 0}, "parallel_num must be at least 1"),
        ({"scene_key": "dataset", "evaluate_code": "../x"}, "evaluate_code"),
    ],
)
def test_spec_errors_name_the_field(fields: dict[str, object], message: str) -> None:
    body = {"evaluate_metrics": ["mrr"], **fields}
    with pytest.raises(ConfigError, match=message):
        config_from_request(EvaluateServeRequest.model_validate(body))


def test_compare_pairs_rows_by_query_hand_worked() -> None:
    from ragmeter.runs.views.compare import compare_scores

    base = [("q1", "mrr", 0.5), ("q2", "mrr", 1.0), ("q3", "mrr", None), ("q1", "mrr", 0.0)]
    other = [("q2", "mrr", 1.0), ("q1", "mrr", 1.0), ("q3", "mrr", 0.5), ("q1", "mrr", 0.5)]
    other += [("q1", "hit_rate", 1.0)]  # a metric only one run has is left out
    (mrr,) = compare_scores(base, other)
    # pairs: q1#0 0.5->1.0, q2 1.0->1.0, q1#1 0.0->0.5; q3 is null in base
    assert (mrr.paired, mrr.better, mrr.worse, mrr.same) == (3, 2, 0, 1)
    assert mrr.delta == pytest.approx((0.5 + 0.0 + 0.5) / 3)
    assert mrr.base_mean == pytest.approx(0.5) and mrr.other_mean == pytest.approx(0.75)
    assert mrr.ci95_low is not None and mrr.ci95_high is not None
    assert mrr.ci95_low <= mrr.delta <= mrr.ci95_high


@pytest.mark.parametrize(
    ("text", "expected"),
    [("12", True), ("²", False), ("٣", False), ("1a", False), ("9" * 30, False)],
)
def test_ids_are_ascii_digits(text: str, expected: bool) -> None:
    from ragmeter.store.lookup import is_id

    assert is_id(text) is expected
