"""The scripted judge's noise: a share of its verdicts flipped, fixed per request and seed, so
two seeds judge like two samples of one model and a repeated request gets the same reply."""

from __future__ import annotations

import json

import pytest

from ragmeter.errors import ConfigError
from ragmeter.testing import ScriptedJudgeServer
from ragmeter.testing.answers import answer_chat


def _body(i: int, seed: int | None = None) -> dict[str, object]:
    statements = [f"Statement {i}-{k} about tides." for k in range(10)]
    inputs = {"response_statements": statements, "contexts": statements[:5]}
    body: dict[str, object] = {
        "messages": [
            {"role": "system", "content": 'Reply in JSON with keys "faithfulness".'},
            {"role": "user", "content": json.dumps(inputs)},
        ]
    }
    if seed is not None:
        body["seed"] = seed
    return body


def _verdicts(reply: str) -> list[bool]:
    return [v["verdict"] for v in json.loads(reply)["faithfulness"]]


def test_noise_flips_about_its_share_of_verdicts_the_same_way_each_time() -> None:
    clean = [_verdicts(answer_chat(_body(i))) for i in range(200)]
    noisy = [_verdicts(answer_chat(_body(i), noise=0.1, seed=1)) for i in range(200)]
    flips = sum(
        a != b for c, n in zip(clean, noisy, strict=True) for a, b in zip(c, n, strict=True)
    )
    assert 140 <= flips <= 260  # 10% of 2,000 verdicts, within ~4 standard deviations
    again = [_verdicts(answer_chat(_body(i), noise=0.1, seed=1)) for i in range(200)]
    assert again == noisy
    other = [_verdicts(answer_chat(_body(i), noise=0.1, seed=2)) for i in range(200)]
    assert other != noisy
    # the request's own seed parameter is another sample too
    sampled = [_verdicts(answer_chat(_body(i, seed=7), noise=0.1, seed=1)) for i in range(200)]
    assert sampled != noisy


def test_noise_outside_0_to_1_is_refused() -> None:
    with pytest.raises(ConfigError, match="between 0 and 1"):
        ScriptedJudgeServer(noise=1.5)
