"""Issue 11, finding 8 (judge limits per model, not per run) and finding 11's unreachable
judge: runs at once share one model's concurrency, Retry-After is capped, and a judge at a
dead URL fails ``ragmeter eval`` fast, naming the URL (never its password)."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

import ragmeter
from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.judge.engine import JudgeEngine, JudgeSettings
from ragmeter.testing import FaultPlan, ScriptedJudgeServer
from tests.integration.helpers import run
from tests.integration.service import ServiceProcess, data, free_port, wait_run


def _rows(tag: str, count: int) -> list[dict[str, object]]:
    return [
        {
            "query": f"{tag} question {i} about AWEL",
            "response": f"AWEL {tag} answer {i}: it has an operator layer.",
            "retrieved_contexts": ["AWEL has an operator layer."],
        }
        for i in range(count)
    ]


def test_two_runs_at_once_share_the_models_declared_concurrency(tmp_path: Path) -> None:
    with ScriptedJudgeServer(latency_ms=150) as judge:
        home = tmp_path / "home"
        home.mkdir()
        (home / "ragmeter.toml").write_text(
            f'[models.judge]\nbase_url = "{judge.url}"\nmodel = "scripted"\n'
            "max_concurrency = 3\n\n[server]\nworkers = 2\n",
            encoding="utf-8",
        )
        with ServiceProcess(home) as server, server.client() as http:
            ids = [
                data(
                    http.post(
                        "/evaluate/runs",
                        json={
                            "scene_key": "dataset",
                            "evaluate_metrics": ["AnswerRelevancyMetric"],
                            "context": {"model": "judge"},
                            "datasets": _rows(tag, 12),
                            "parallel_num": 8,
                        },
                    ),
                    202,
                )["run_id"]
                for tag in ("first", "second")
            ]
            infos = [wait_run(http, run_id) for run_id in ids]
        stats = judge.snapshot()
    assert [i["state"] for i in infos] == ["done", "done"]
    assert stats["chat_requests"] == 24
    assert [i["cost"]["requests"] for i in infos] == [12, 12]  # each run counts its own
    # each run alone would send 3 at once (16 rows in flight between them): together, still 3
    assert stats["max_in_flight"] == 3, stats


def test_retry_after_is_capped_by_retry_max_delay(tmp_path: Path) -> None:
    faults = FaultPlan(rate_limit=0.3, retry_after=120, seed=3)
    with ScriptedJudgeServer(faults=faults) as judge:
        engine = JudgeEngine(
            JudgeSettings(model="scripted", base_url=judge.url, retry_max_delay=0.2)
        )
        started = time.monotonic()
        report = ragmeter.evaluate(synthetic_rows(8), "faithfulness", judge=engine)
        elapsed = time.monotonic() - started
        stats = judge.snapshot()
    assert stats["fault_rate_limit"] > 0
    assert elapsed < 60  # honouring Retry-After: 120 s would take minutes
    assert sum(s is not None for s in report.scores("faithfulness")) >= 6


def test_a_judge_that_answers_500_sometimes_is_retried_as_before() -> None:
    with ScriptedJudgeServer(faults=FaultPlan(server_error=0.3, seed=7)) as judge:
        engine = JudgeEngine(
            JudgeSettings(model="scripted", base_url=judge.url, retry_base_delay=0.05)
        )
        report = ragmeter.evaluate(synthetic_rows(10), "faithfulness", judge=engine)
        stats = judge.snapshot()
    assert stats["fault_server_error"] > 0
    assert engine.fatal is None
    assert all(s is not None for s in report.scores("faithfulness"))
    assert report.usage is not None and report.usage["retries"] >= stats["fault_server_error"]


class DroppingListener:
    """A TCP port that accepts connections and closes them at once (no HTTP answer): an
    endpoint that cannot be reached, where the attempts can still be counted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def __enter__(self) -> DroppingListener:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.sock.close()


@pytest.fixture
def rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    lines = [json.dumps(r) for r in synthetic_rows(20)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _eval_against(url: str, rows_file: Path, home: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    result = run(
        "eval", str(rows_file), "--metrics", "faithfulness,AnswerRelevancyMetric",
        "--judge-base-url", url, "--judge-model", "gpt-judge", "--no-cache", home=home,
    )  # fmt: skip
    return result.returncode, result.stderr, time.monotonic() - started


def test_eval_against_a_closed_port_exits_1_naming_the_url(rows_file: Path, tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    code, stderr, elapsed = _eval_against(url, rows_file, tmp_path / "home")
    assert code == 1, stderr
    assert f"judge 'gpt-judge' at {url} is unreachable" in " ".join(stderr.split())
    assert elapsed < 60  # it stops at all; it used to take 30 s and exit 0


def test_an_unreachable_judge_costs_a_handful_of_requests_and_hides_its_password(
    rows_file: Path, tmp_path: Path
) -> None:
    with DroppingListener() as listener:
        url = f"http://ragmeter:s3cret-pass@127.0.0.1:{listener.port}/v1"
        code, stderr, _elapsed = _eval_against(url, rows_file, tmp_path / "home")
        accepted = listener.accepted
    assert code == 1, stderr
    flat = " ".join(stderr.split())
    assert f"at http://127.0.0.1:{listener.port}/v1 is unreachable" in flat
    assert "s3cret-pass" not in stderr
    assert 1 <= accepted <= 5  # 20 rows x 2 metrics x 5 tries used to be 200 requests
