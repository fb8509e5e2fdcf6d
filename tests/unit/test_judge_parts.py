"""Judge building blocks: reply parsing, request building, language, config, formulas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragmeter
from ragmeter.config import load_settings
from ragmeter.errors import ConfigError, public_url
from ragmeter.judge._parse import extract_json
from ragmeter.judge.tasks import build_request, detect_language
from ragmeter.metrics.llm.ragas import average_precision_of_useful, statement_f1


def test_extract_json_tolerates_fences_and_prose() -> None:
    assert extract_json('Sure!\n```json\n{"a": [1, 2]}\n```\nDone.') == {"a": [1, 2]}
    assert extract_json('The answer is {"verdict": true} as asked.') == {"verdict": True}
    with pytest.raises(ValueError, match="invalid JSON"):
        extract_json('{"statements": ["one", "tw')
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("4\nlooks fine")


def test_build_request_sends_only_needed_inputs_and_checks_lengths() -> None:
    inputs = {
        "question": "q",
        "response": "r",
        "reference": "ref",
        "contexts": ["c1", "c2"],
        "response_statements": ["s1", "s2", "s3"],
    }
    request = build_request(
        ["faithfulness", "context_usefulness"], {**inputs, "target": "ref"}, "en"
    )
    sent = json.loads(request.user)
    assert set(sent) == {"question", "contexts", "response_statements", "target"}
    assert request.expected_lengths == {"faithfulness": 3, "context_usefulness": 2}
    assert '"faithfulness", "context_usefulness"' in request.system
    verdict = {"reason": "", "verdict": True}
    short = request.reply_model.model_validate(
        {"faithfulness": [verdict], "context_usefulness": [verdict, verdict]}
    )
    assert request.check(short) == "`faithfulness` has 1 items but must have 3, one per input item"
    full = request.reply_model.model_validate(
        {"faithfulness": [verdict] * 3, "context_usefulness": [verdict] * 2}
    )
    assert request.check(full) is None
    zh = build_request(["response_statements"], inputs, "zh")
    assert "拆成" in zh.system


def test_detect_language() -> None:
    assert detect_language("What is AWEL?", "AWEL is a language.") == "en"
    assert detect_language("AWEL 是什么？", "AWEL 是一种工作流表达语言。") == "zh"
    assert detect_language(None, "") == "en"


def test_models_by_name_from_ragmeter_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path))
    (tmp_path / "ragmeter.toml").write_text(
        '[models.zhipu_proxyllm]\nbase_url = "https://example.invalid/v1"\n'
        'model = "glm-4-flash"\napi_key_env = "ZHIPU_TEST_KEY"\n'
    )
    settings = load_settings()
    model = settings.model("zhipu_proxyllm")
    assert (model.model, model.base_url) == ("glm-4-flash", "https://example.invalid/v1")
    monkeypatch.delenv("ZHIPU_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"\$ZHIPU_TEST_KEY, which is not set"):
        model.api_key()
    monkeypatch.setenv("ZHIPU_TEST_KEY", "k")
    assert model.api_key() == "k"
    with pytest.raises(ConfigError, match=r"unknown model 'gpt5'.*declares zhipu_proxyllm"):
        settings.model("gpt5")


def test_bad_config_names_file_and_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path))
    (tmp_path / "ragmeter.toml").write_text('[models.x]\nbase_url = "u"\n')
    with pytest.raises(ConfigError, match=r"ragmeter.toml: models.x.model: Field required"):
        load_settings()
    (tmp_path / "ragmeter.toml").write_text("[models\n")
    with pytest.raises(ConfigError, match=r"ragmeter\.toml"):
        load_settings()


def test_public_url_drops_credentials_and_the_query() -> None:
    assert public_url("https://me:pw@judge.example:8443/v1") == "https://judge.example:8443/v1"
    assert public_url("http://judge.example/v1?key=secret") == "http://judge.example/v1?..."
    assert public_url("http://127.0.0.1:9/v1") == "http://127.0.0.1:9/v1"


def test_context_precision_hand_worked() -> None:
    # useful at ranks 1 and 3: (1/1 + 2/3) / 2
    assert average_precision_of_useful([True, False, True]) == pytest.approx(5 / 6)
    assert average_precision_of_useful([False, True]) == pytest.approx(0.5)
    assert average_precision_of_useful([False, False]) == 0.0
    assert average_precision_of_useful([]) == 0.0


def test_statement_f1_hand_worked() -> None:
    assert statement_f1(1, 2, 1) == pytest.approx(1 / 2.5)
    assert statement_f1(3, 0, 0) == 1.0


@given(st.lists(st.booleans(), max_size=12))
def test_context_precision_bounds_and_rank_order(flags: list[bool]) -> None:
    score = average_precision_of_useful(flags)
    assert 0.0 <= score <= 1.0
    if flags and all(flags):
        assert score == 1.0
    ranked_best = sorted(flags, reverse=True)  # every useful context first
    assert average_precision_of_useful(ranked_best) >= score - 1e-12


class FixedJudge:
    """A plain ``complete`` judge replying with fixed verdicts, to check the formulas end to end."""

    async def complete(self, prompt: str) -> str:
        keys = prompt.split("exactly the keys: ")[1].split("\n")[0].rstrip(".")
        wanted = [k.strip().strip('"') for k in keys.split(",")]
        v = lambda ok: {"reason": "", "verdict": ok}  # noqa: E731
        canned = {
            "response_statements": ["s1", "s2", "s3", "s4"],
            "reference_statements": ["r1", "r2"],
            "questions": ["q1", "q2", "q3"],
            "noncommittal": False,
            "faithfulness": [v(True), v(True), v(False), v(True)],
            "context_usefulness": [v(True), v(False), v(True)],
            "reference_attribution": [v(True), v(False)],
            "response_in_reference": [v(True), v(False), v(False), v(False)],
            "reference_in_response": [v(True), v(False)],
        }
        return json.dumps({k: canned[k] for k in wanted})


@pytest.mark.parametrize("plan", ["fused", "separate"])
def test_ragas_formulas_from_fixed_verdicts(plan: str) -> None:
    rows = [
        {
            "query": "q",
            "response": "r",
            "reference": "ref",
            "retrieved_contexts": ["c1", "c2", "c3"],
        }
    ]
    report = ragmeter.evaluate(
        rows,
        "faithfulness,context_precision,context_recall,answer_correctness(similarity_weight=0)",
        judge=FixedJudge(),
        plan=plan,  # type: ignore[arg-type]
    )
    assert report.scores("faithfulness") == [pytest.approx(3 / 4)]
    assert report.scores("context_precision") == [pytest.approx(5 / 6)]
    assert report.scores("context_recall") == [pytest.approx(1 / 2)]
    # TP=1, FP=3, FN=1 -> 1 / (1 + 0.5 * 4)
    assert report.scores("answer_correctness(similarity_weight=0)") == [pytest.approx(1 / 3)]


class CountingJudge(FixedJudge):
    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, prompt: str) -> str:
        self.calls += 1
        return await super().complete(prompt)


def test_a_metrics_own_judge_is_asked_instead_of_the_evaluations() -> None:
    from ragmeter.metrics import ContextRecallMetric, FaithfulnessMetric

    rows = [{"query": "q", "response": "r", "reference": "ref", "retrieved_contexts": ["c1"]}]
    own, shared = CountingJudge(), CountingJudge()
    report = ragmeter.evaluate(
        rows, [FaithfulnessMetric(judge=own), ContextRecallMetric()], judge=shared
    )
    assert report.scores("FaithfulnessMetric") == [pytest.approx(3 / 4)]
    assert report.scores("ContextRecallMetric") == [pytest.approx(1 / 2)]
    assert own.calls == 2  # statements, then verdicts: only faithfulness's tasks
    assert shared.calls == 2  # context recall's own two requests


def test_a_raw_reply_gives_its_content_and_token_counts() -> None:
    from ragmeter.judge.engine import reply_parts

    body = {
        "choices": [{"message": {"role": "assistant", "content": '{"ok": 1}'}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3.0},
    }
    assert reply_parts(json.dumps(body).encode()) == ('{"ok": 1}', 12, 3, False)
    # the server did not count: None, so the engine estimates
    del body["usage"]
    assert reply_parts(json.dumps(body).encode()) == ('{"ok": 1}', None, None, False)
    # counts it gave badly are 0, as the SDK's "or 0" made them
    body["usage"] = {"prompt_tokens": None, "completion_tokens": "many"}
    assert reply_parts(json.dumps(body).encode()) == ('{"ok": 1}', 0, 0, False)
    body["usage"] = {"prompt_tokens": True, "completion_tokens": -5}
    assert reply_parts(json.dumps(body).encode()) == ('{"ok": 1}', 0, 0, False)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'{"choices": []}',
        b'{"choices": [{"message": {"content": null}}]}',
        b'{"choices": [{"message": "text"}]}',
        b'{"choices": "x"}',
        b"\xff\xfe",
    ],
)
def test_a_raw_reply_of_another_shape_has_no_content(body: bytes) -> None:
    from ragmeter.judge.engine import reply_parts

    assert reply_parts(body)[0] == ""
