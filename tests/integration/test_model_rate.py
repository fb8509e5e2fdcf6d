"""A model's requests_per_minute, counted in the store: every process sharing it (a team's
server replicas, commands) takes a place among the last minute's requests, so together
they never pass the limit."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ragmeter.judge._rate import MARGIN_S, WINDOW_S, StoreRate
from ragmeter.store.db import Store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import RAGMETER


def test_a_place_frees_when_the_oldest_request_leaves_the_minute(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'rate.db'}")
    rate = StoreRate(store, "http://judge/v1 m", 3)
    other = StoreRate(store, "http://judge/v1 other", 1)  # counted apart
    assert [rate.try_take(now=t) for t in (100.0, 101.0, 102.0)] == [0.0, 0.0, 0.0]
    freed = WINDOW_S + MARGIN_S  # after a place is taken, it frees this much later
    assert rate.try_take(now=110.0) == freed - 10.0  # until 100 + 61
    assert other.try_take(now=110.0) == 0.0
    assert rate.try_take(now=100.0 + freed + 0.5) == 0.0  # the one of 100.0 has left
    assert abs(rate.try_take(now=100.0 + freed + 0.6) - 0.4) < 1e-9  # 101.0 leaves 0.4 s later
    store.close()


def test_two_processes_together_never_pass_a_model_s_requests_per_minute(
    tmp_path: Path,
) -> None:
    """Two commands judging 6 rows each, at once, against a model allowed 8 requests a
    minute: 8 go in the first minute, the other 4 only once the first have left it."""
    per_minute, rows = 8, 6
    home = tmp_path / "home"
    home.mkdir()
    data = tmp_path / "qa.jsonl"
    data.write_text(
        "".join(json.dumps({"query": f"q {i}", "response": f"a {i}"}) + "\n" for i in range(rows)),
        encoding="utf-8",
    )
    with ScriptedJudgeServer() as judge:
        (home / "ragmeter.toml").write_text(
            f'[models.scripted]\nbase_url = "{judge.url}"\nmodel = "scripted"\n'
            f"requests_per_minute = {per_minute}\n",
            encoding="utf-8",
        )
        env = {**os.environ, "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1"}
        args = [*RAGMETER, "eval", str(data), "-m", "AnswerRelevancyMetric", "--judge-model",
                "scripted", "--no-cache", "--no-store"]  # fmt: skip
        children = [
            subprocess.Popen(
                args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        outputs = [child.communicate(timeout=300) for child in children]
        assert [c.returncode for c in children] == [0, 0], outputs
        arrivals = sorted(judge.arrivals)
    assert len(arrivals) == 2 * rows
    for i, start in enumerate(arrivals):  # any minute: at most per_minute requests
        within = [t for t in arrivals[i:] if t < start + WINDOW_S]
        assert len(within) <= per_minute, (i, len(within))
    assert arrivals[per_minute] - arrivals[0] >= WINDOW_S - 1  # the 9th waited for a place
