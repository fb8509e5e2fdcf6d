"""A model's requests_per_minute, counted in the store (a SQLite file, or a PostgreSQL
database): every process sharing it (a team's server replicas, commands) takes a place among
the last minute's requests, so together they never pass the limit."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ragmeter.judge._rate import LATE_S, MARGIN_S, WINDOW_S, StoreRate
from ragmeter.store.db import Store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import RAGMETER
from tests.integration.service import ServiceProcess, data, wait_run

PER_MINUTE, ROWS = 8, 6  # two processes judging 6 rows each: 12 requests, 8 a minute


def _config(judge: ScriptedJudgeServer, store_url: str) -> str:
    """A ``ragmeter.toml``: the scripted model allowed PER_MINUTE requests, and the store
    (nothing for the home's default SQLite file)."""
    store = "" if store_url.startswith("sqlite") else f'[store]\nurl = "{store_url}"\n\n'
    return (
        f'{store}[models.scripted]\nbase_url = "{judge.url}"\nmodel = "scripted"\n'
        f"requests_per_minute = {PER_MINUTE}\n"
    )


def _check_minutes(arrivals: list[float]) -> None:
    """In any minute at most PER_MINUTE requests arrived; the one past them waited for the
    first to leave the minute."""
    assert len(arrivals) == 2 * ROWS
    for i, start in enumerate(arrivals):
        within = [t for t in arrivals[i:] if t < start + WINDOW_S]
        assert len(within) <= PER_MINUTE, (i, len(within))
    assert arrivals[PER_MINUTE] - arrivals[0] >= WINDOW_S - 1


def test_a_place_frees_when_the_oldest_request_leaves_the_minute(store_url: str) -> None:
    store = Store(store_url)
    rate = StoreRate(store, "http://judge/v1 m", 3)
    other = StoreRate(store, "http://judge/v1 other", 1)  # counted apart
    assert [rate.try_take(now=t) for t in (100.0, 101.0, 102.0)] == [0.0, 0.0, 0.0]
    freed = WINDOW_S + MARGIN_S  # after a place is taken, it frees this much later
    assert rate.try_take(now=110.0) == freed - 10.0  # until 100 + 61
    assert other.try_take(now=110.0) == 0.0
    assert rate.try_take(now=100.0 + freed + 0.5) == 0.0  # the one of 100.0 has left
    assert abs(rate.try_take(now=100.0 + freed + 0.6) - 0.4) < 1e-9  # 101.0 leaves 0.4 s later
    store.close()


def test_a_request_sent_late_holds_its_place_a_minute_after_it_was_sent(
    store_url: str,
) -> None:
    store = Store(store_url)
    rate = StoreRate(store, "http://judge/v1 m", 1)
    freed = WINDOW_S + MARGIN_S
    quick = rate.take(now=100.0)[1]
    assert quick is not None and not rate.late(quick, 100.0 + LATE_S)
    assert rate.late(quick, 100.0 + LATE_S + 0.01)  # the rest of the margin is for the way
    assert rate.try_take(now=100.0 + freed + 0.1) == 0.0  # a quick one frees on time
    _wait, slow = rate.take(now=300.0)  # (the place taken at 161.1 has left by then)
    assert slow is not None and rate.late(slow, 303.0)
    rate.stamp(slow, 303.0)  # sent at 303.0: it reached the model then
    assert abs(rate.try_take(now=300.0 + freed + 0.5) - 2.5) < 1e-9  # held until 303 + 61
    assert rate.try_take(now=303.0 + freed + 0.1) == 0.0
    # one sent after its place was freed takes a place again until a minute after
    two = StoreRate(store, "http://judge/v1 two", 2)
    _wait, lost = two.take(now=400.0)
    assert lost is not None and two.try_take(now=400.0 + freed + 0.1) == 0.0  # lost's freed
    two.stamp(lost, 400.0 + freed + 0.2)
    assert two.try_take(now=400.0 + freed + 0.3) > 0.0  # two places held: the late one again
    store.close()


def test_two_processes_together_never_pass_a_model_s_requests_per_minute(
    store_url: str, tmp_path: Path
) -> None:
    """Two commands judging 6 rows each, at once, against a model allowed 8 requests a
    minute: 8 go in the first minute, the other 4 only once the first have left it."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    dataset = tmp_path / "qa.jsonl"
    dataset.write_text(
        "".join(json.dumps({"query": f"q {i}", "response": f"a {i}"}) + "\n" for i in range(ROWS)),
        encoding="utf-8",
    )
    with ScriptedJudgeServer() as judge:
        (home / "ragmeter.toml").write_text(_config(judge, store_url), encoding="utf-8")
        env = {**os.environ, "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1"}
        args = [*RAGMETER, "eval", str(dataset), "-m", "AnswerRelevancyMetric", "--judge-model",
                "scripted", "--no-cache", "--no-store"]  # fmt: skip
        children = [
            subprocess.Popen(
                args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        outputs = [child.communicate(timeout=300) for child in children]
        assert [c.returncode for c in children] == [0, 0], outputs
        _check_minutes(sorted(judge.arrivals))


def test_two_replicas_together_never_pass_a_model_s_requests_per_minute(
    store_url: str, tmp_path: Path
) -> None:
    """Two ``ragmeter serve`` replicas on one store, each given a run judging 6 rows, the
    model allowed 8 requests a minute: together 8 in the first minute, the rest after."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)

    def body(replica: int) -> dict[str, object]:  # rows of their own: none answered by cache
        rows = [{"query": f"q {replica} {i}", "response": f"a {i}"} for i in range(ROWS)]
        return {
            "scene_key": "dataset",
            "evaluate_metrics": ["AnswerRelevancyMetric"],
            "context": {"model": "scripted"},
            "datasets": rows,
        }

    with ScriptedJudgeServer() as judge:
        (home / "ragmeter.toml").write_text(_config(judge, store_url), encoding="utf-8")
        replicas = [ServiceProcess(home).start(), ServiceProcess(home).start()]
        try:
            runs = []
            for number, replica in enumerate(replicas):
                with replica.client() as http:
                    created = data(http.post("/evaluate/runs", json=body(number)), 202)
                    runs.append(created["run_id"])
            for replica, run_id in zip(replicas, runs, strict=True):
                with replica.client() as http:
                    info = wait_run(http, run_id, timeout=240)
                assert info["state"] == "done" and info["progress"]["done"] == ROWS, info
        finally:
            for replica in replicas:
                replica.stop()
        _check_minutes(sorted(judge.arrivals))


def test_a_request_counts_as_sent_when_its_body_is_written() -> None:
    """The moment a rate compares with its place's is when the request's body was written
    to its connection (a busy event loop may write it well after the request was made):
    told once per request, between the call and the reply, before the judge answers."""
    import asyncio
    import time

    from ragmeter.judge.chat import ChatClient

    async def ask(url: str) -> tuple[float, list[float], float]:
        client = ChatClient(url, "key", 10.0)
        written: list[float] = []
        body = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}
        try:
            before = time.time()
            await client.complete(body, on_written=lambda: written.append(time.time()))
            return before, written, time.time()
        finally:
            await client.aclose()

    with ScriptedJudgeServer(latency_ms=300) as judge:
        before, written, after = asyncio.run(ask(judge.url))
    assert len(written) == 1
    assert before <= written[0] <= after - 0.25  # the reply came 300 ms after the request
