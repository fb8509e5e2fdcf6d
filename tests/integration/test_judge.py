"""The judge engine and the LLM metrics through the real ``openai`` client against the
scripted judge server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragmeter
from ragmeter.config import load_settings
from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.embeddings import embedder_from_config
from ragmeter.judge.cache import JudgeCache
from ragmeter.judge.engine import JudgeEngine, JudgeSettings
from ragmeter.judge.from_config import judge_from_config
from ragmeter.store.db import open_store
from ragmeter.testing import ScriptedJudgeServer
from ragmeter.testing.server import FaultPlan

RAGAS_FIVE = "faithfulness,answer_relevancy,context_precision,context_recall,answer_correctness"
SIX = RAGAS_FIVE + ",AnswerRelevancyMetric"


def _evaluate(
    server: ScriptedJudgeServer, rows: object, metrics: str, **kwargs: object
) -> ragmeter.EvaluationReport:
    cache = bool(kwargs.pop("cache", True))
    judge = judge_from_config("scripted", base_url=server.url, cache=cache)
    embedder = embedder_from_config("scripted", base_url=server.url)
    return ragmeter.evaluate(rows, metrics, judge=judge, embedder=embedder, **kwargs)  # type: ignore[arg-type]


def test_fused_and_separate_plans_give_the_same_scores(
    judge_server: ScriptedJudgeServer, home: Path
) -> None:
    rows = synthetic_rows(12)
    fused = _evaluate(judge_server, rows, RAGAS_FIVE, plan="fused", cache=False)
    fused_requests = judge_server.snapshot()["chat_requests"]
    judge_server.reset()
    separate = _evaluate(judge_server, rows, RAGAS_FIVE, plan="separate", cache=False)
    separate_requests = judge_server.snapshot()["chat_requests"]
    assert fused_requests <= 3 * len(rows)
    assert fused_requests == 2 * len(rows)
    assert separate_requests == 8 * len(rows)  # one request per task: 3 first, 5 second
    for name in RAGAS_FIVE.split(","):
        assert fused.scores(name) == separate.scores(name), name
        assert all(s is not None for s in fused.scores(name)), name
    # the verdicts vary with the data: not every row scores the same
    assert len(set(fused.scores("faithfulness"))) > 1
    assert fused.usage is not None and fused.usage["requests"] == fused_requests


def test_costs_add_up_to_the_run_total(judge_server: ScriptedJudgeServer, home: Path) -> None:
    report = _evaluate(judge_server, synthetic_rows(6), SIX, cache=False)
    stats = judge_server.snapshot()
    charged = sum(r.cost["requests"] for r in report if r.cost)
    assert charged == pytest.approx(stats["chat_requests"])
    tokens = sum(r.prediction_cost for r in report)
    assert tokens == pytest.approx(
        stats["prompt_tokens"] + stats["completion_tokens"], abs=len(report)
    )
    assert report.usage is not None and report.usage["prompt_tokens"] == stats["prompt_tokens"]


def test_second_run_is_served_from_the_cache(judge_server: ScriptedJudgeServer, home: Path) -> None:
    rows = synthetic_rows(5)
    first = _evaluate(judge_server, rows, SIX)
    assert judge_server.snapshot()["chat_requests"] == 15
    judge_server.reset()
    second = _evaluate(judge_server, rows, SIX)
    assert judge_server.snapshot().get("chat_requests", 0) == 0
    assert second.usage is not None and second.usage["cached"] == 15
    for name in SIX.split(","):
        assert first.scores(name) == second.scores(name)
    third = _evaluate(judge_server, rows, SIX, cache=False)
    assert judge_server.snapshot()["chat_requests"] == 15
    assert third.scores("faithfulness") == first.scores("faithfulness")


def test_identical_requests_made_at_once_are_sent_once(home: Path) -> None:
    rows = synthetic_rows(3) * 4  # each row four times: each request made four times at once
    with ScriptedJudgeServer(latency_ms=100) as server:
        once = _evaluate(server, rows[:3], SIX, cache=False)
        sent_for_three = server.snapshot()["chat_requests"]
        server.reset()
        report = _evaluate(server, rows, SIX)  # with the cache, which is empty
        stats = server.snapshot()
        server.reset()
        _evaluate(server, rows, SIX, cache=False)  # without: each asked, as --no-cache says
        uncached = server.snapshot()["chat_requests"]
    assert stats["chat_requests"] == sent_for_three == 9 and uncached == 36
    assert stats["max_in_flight"] > 1  # the requests were made at once, not one by one
    assert report.usage is not None
    assert report.usage["requests"] == 9 and report.usage["cached"] == 27
    charged = sum(r.cost["requests"] for r in report if r.cost)
    assert charged == pytest.approx(9)
    for name in SIX.split(","):
        assert report.scores(name) == once.scores(name) * 4, name


def test_when_the_first_of_identical_requests_fails_the_others_ask_on_their_own(
    home: Path,
) -> None:
    """Four rows ask the same thing at once; the one request sent fails (a 500, no retry).
    The three rows waiting for its reply are not failed with it: each asks on its own."""

    def draws(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [rng.random() for _ in range(4)]

    # the judge's faults are drawn per request from its seed: the first fails, no other
    seed = next(s for s in range(1000) if draws(s)[0] < 0.5 <= min(draws(s)[1:]))
    faults = FaultPlan(server_error=0.5, seed=seed)
    with ScriptedJudgeServer(latency_ms=200, faults=faults) as server:
        settings = JudgeSettings(model="scripted", base_url=server.url, max_retries=0)
        store = open_store(load_settings().store_url())
        try:
            judge = JudgeEngine(settings, cache=JudgeCache(store))
            report = ragmeter.evaluate(synthetic_rows(1) * 4, "context_precision", judge=judge)
        finally:
            store.close()
        stats = server.snapshot()
    assert stats["chat_requests"] == 4 and stats["fault_server_error"] == 1
    scores = report.scores("context_precision")
    assert sum(score is None for score in scores) == 1  # the row whose request failed
    assert len({score for score in scores if score is not None}) == 1  # the others scored
    failed = next(r for r in report.results("context_precision") if r.score is None)
    assert failed.error and "500" in failed.error


def test_chinese_rows_get_chinese_prompts(judge_server: ScriptedJudgeServer, home: Path) -> None:
    rows = [
        {
            "query": "AWEL 是什么？",
            "response": "AWEL 是一种工作流表达语言。它分为三层。",
            "retrieved_contexts": [
                "AWEL 是一种为大模型应用设计的工作流表达语言。",
                "AWEL 分为算子层、AgentFream 层和 DSL 层。",
            ],
            "reference": "AWEL 是一种工作流表达语言。",
        }
    ]
    seen: list[str] = []
    judge_server.log = seen.append
    report = _evaluate(judge_server, rows, "faithfulness,AnswerRelevancyMetric", cache=False)
    assert report.scores("faithfulness")[0] is not None
    assert report.scores("AnswerRelevancyMetric")[0] is not None
    assert "参考内容" in (report.results("AnswerRelevancyMetric")[0].feedback or "")
    assert len(seen) == 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli(*args: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "RAGMETER_HOME": str(home),
    }
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


@pytest.fixture
def faulty_server(home: Path) -> Iterator[str]:
    """``ragmeter judge-server`` as a user starts it, injecting the faults of the issue."""
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "ragmeter", "judge-server", "--port", str(port), "--quiet",
            "--faults", "malformed=0.3,rate_limit=0.1,server_error=0.05,hang=0.03",
            "--hang-seconds", "2", "--retry-after", "0.1", "--seed", "7",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=1).close()
            break
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"judge-server did not start: {process.communicate()}") from None
            time.sleep(0.1)
    try:
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_faulty_judge_run_completes_with_every_null_explained(
    faulty_server: str, home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in synthetic_rows(50)) + "\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    result = _cli(
        "eval", str(data), "--metrics", SIX,
        "--judge-base-url", faulty_server, "--judge-model", "scripted", "--judge-timeout", "0.5",
        "--embedding-base-url", faulty_server, "--embedding-model", "scripted",
        "--out", str(out), home=home,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 300
    for line in lines:
        assert (line["score"] is None) == (line["error"] is not None), line
    nulls = sum(line["score"] is None for line in lines)
    scored = len(lines) - nulls
    assert scored >= 240  # re-asks and retries recover most faults
    if nulls:
        assert f"{nulls} result(s) have no score" in result.stdout
    assert "retries" in result.stdout and "re-asks" in result.stdout
    with urllib.request.urlopen(f"{faulty_server}/stats", timeout=5) as reply:
        stats = json.load(reply)
    assert stats["fault_malformed"] > 0 and stats["fault_rate_limit"] > 0
    assert stats["fault_server_error"] > 0 and stats["fault_hang"] > 0


def test_bad_row_fails_before_any_request(
    judge_server: ScriptedJudgeServer, home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "rows.jsonl"
    rows = synthetic_rows(3)
    del rows[2]["response"]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = _cli(
        "eval", str(data), "--metrics", "faithfulness",
        "--judge-base-url", judge_server.url, "--judge-model", "scripted", home=home,
    )  # fmt: skip
    assert result.returncode == 2
    assert "line 3 (row 2)" in result.stderr and "'faithfulness' needs response" in result.stderr
    assert judge_server.snapshot().get("chat_requests", 0) == 0


def test_models_by_name_and_missing_key(
    judge_server: ScriptedJudgeServer, home: Path, tmp_path: Path
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "ragmeter.toml").write_text(
        f'[models.dry_run]\nbase_url = "{judge_server.url}"\nmodel = "scripted"\napi_key_env = "DRY_RUN_KEY"\n'
    )
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in synthetic_rows(2)) + "\n", encoding="utf-8")
    os.environ.pop("DRY_RUN_KEY", None)
    missing = _cli("eval", str(data), "-m", "faithfulness", "--judge-model", "dry_run", home=home)
    assert missing.returncode == 2
    assert "$DRY_RUN_KEY, which is not set" in missing.stderr
    unknown = _cli("eval", str(data), "-m", "faithfulness", "--judge-model", "nope", home=home)
    assert unknown.returncode == 2 and "unknown model 'nope'" in unknown.stderr
    assert judge_server.snapshot().get("chat_requests", 0) == 0
    os.environ["DRY_RUN_KEY"] = "secret"
    try:
        ok = _cli(
            "eval",
            str(data),
            "-m",
            "faithfulness,context_recall",
            "--judge-model",
            "dry_run",
            home=home,
        )
    finally:
        os.environ.pop("DRY_RUN_KEY", None)
    assert ok.returncode == 0, ok.stderr
    assert "judge: 4 requests" in ok.stdout


def test_endpoint_without_json_schema_falls_back_to_json_object(home: Path) -> None:
    with ScriptedJudgeServer(refuse_json_schema=True) as server:
        report = _evaluate(server, synthetic_rows(8), "faithfulness,context_recall", cache=False)
        stats = server.snapshot()
    assert all(s is not None for s in report.scores("faithfulness"))
    assert all(s is not None for s in report.scores("context_recall"))
    assert 1 <= stats["refused_json_schema"] <= 16  # only the requests in flight when it refused
    assert stats["chat_requests"] - stats["refused_json_schema"] == 16


def test_row_texts_are_embedded_while_the_judge_works(home: Path) -> None:
    """The texts metrics embed as they are (queries, responses, references) go to the
    embedder as the rows start, in one batch, not after the judge has answered each row."""
    from ragmeter.embeddings import LocalEmbedder

    rows = synthetic_rows(6)
    calls: list[tuple[int, list[str]]] = []

    class Recording:
        name = "all-MiniLM-L6-v2"

        def __init__(self, server: ScriptedJudgeServer) -> None:
            self.server = server
            self.local = LocalEmbedder()

        async def embed(self, texts: list[str]) -> object:
            calls.append((self.server.snapshot().get("chat_requests", 0), list(texts)))
            return await self.local.embed(texts)

    with ScriptedJudgeServer(latency_ms=500) as server:
        judge = judge_from_config("scripted", base_url=server.url, cache=False)
        report = ragmeter.evaluate(
            rows, "answer_relevancy,answer_correctness", judge=judge, embedder=Recording(server)
        )
    ahead = {r["query"] for r in rows} | {r["response"] for r in rows}
    ahead |= {r["reference"] for r in rows}
    answered, first = calls[0]
    assert set(first) == ahead
    assert answered <= 1  # the first request (alone until the judge answers) at most
    assert all(s is not None for s in report.scores("answer_correctness"))
    # the vectors came ahead once: later calls embed only the judge's questions
    assert not ahead & {text for _, texts in calls[1:] for text in texts}


def test_a_listening_judge_is_known_reached_before_its_first_request() -> None:
    """While the SDK loads, the engine asks the endpoint for its models: an answer lets the
    first judge requests go together (no chat request was spent on it); an endpoint that does
    not answer is left to the first requests, one at a time."""
    import asyncio

    from ragmeter.judge import JudgeEngine, JudgeSettings

    async def reached(url: str) -> bool:
        engine = JudgeEngine(JudgeSettings(model="scripted", base_url=url, timeout=5))
        await engine._ensure_client()
        assert engine._reach_check is not None
        await engine._reach_check
        await engine.aclose()
        return engine._reached

    with ScriptedJudgeServer() as server:
        assert asyncio.run(reached(server.url))
        assert server.snapshot().get("chat_requests", 0) == 0
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert not asyncio.run(reached(f"http://127.0.0.1:{port}/v1"))
