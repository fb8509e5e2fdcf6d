"""The Ray executor on a Ray cluster of this machine (2 CPUs, loopback) started by this module:
the same results as the local executor row for row (retrieval, judged and agent metrics, the
judge the scripted server), a Ray worker killed mid-run costing only its retried batch, a
driver killed mid-run resumed from the store, and the cluster's judge permits (their actor
killed mid-run) keeping the model's concurrency across workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import ray

import ragmeter
from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.storage.store import RunStore
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import RAGMETER, ray_task_pids, run, write_models
from tests.integration.test_agent_judged import ANTHROPIC, METRICS, OPENAI

RETRIEVAL = "mrr,ndcg@5,recall@3,precision@3,map,hit_rate@5"
JUDGED = "faithfulness,context_precision,context_recall,answer_correctness"


def _config(home: Path, judge: ScriptedJudgeServer, extra: str = "") -> None:
    write_models(home, judge.url)
    with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
        config.write(extra)


def _retrieval_rows(count: int) -> list[dict[str, Any]]:
    return [
        {
            "query": f"question {i}",
            "retrieved_ids": [f"d{(i * 7 + j) % 40}" for j in range(6)],
            "reference_ids": [f"d{i % 40}", f"d{(i * 3) % 40}"],
        }
        for i in range(count)
    ]


def _stored(run_id: str | None) -> list[tuple[Any, ...]]:
    """The run's results in the store, row by row and metric by metric."""
    assert run_id is not None
    runs = RunStore(KnowledgeBase().store)
    assert runs.get(run_id).state == "done"
    report = runs.report(run_id)
    return sorted(
        (r.row_index, r.metric_name, r.score, r.passing, r.feedback, r.error, r.query)
        for r in report
    )


def test_retrieval_metrics_score_the_same_on_the_cluster(cluster: str, home: Path) -> None:
    home.mkdir(parents=True)
    (home / "ragmeter.toml").write_text("[executor]\nbatch_rows = 70\n", encoding="utf-8")
    rows = _retrieval_rows(300)  # 5 batches
    here = ragmeter.evaluate(rows, RETRIEVAL, store="here")
    there = ragmeter.evaluate(rows, RETRIEVAL, store="there", executor="ray")
    assert there.summary() == here.summary()
    stored = _stored(there.run_id)
    assert len(stored) == 300 * 6
    assert stored == _stored(here.run_id)


def test_judged_and_agent_metrics_score_the_same_on_the_cluster(
    cluster: str, home: Path, judge_server: ScriptedJudgeServer
) -> None:
    _config(home, judge_server, '\n[executor]\nkind = "ray"\nbatch_rows = 3\n')
    rows = synthetic_rows(10)
    there = ragmeter.evaluate(rows, JUDGED, judge="scripted", embedder="hashed", store="there")
    asked = judge_server.snapshot()["chat_requests"]
    assert asked >= 10  # the workers asked the judge (nothing was cached yet)
    usage = RunStore(KnowledgeBase().store).get(str(there.run_id)).usage or {}
    assert usage.get("requests") == asked  # the workers' usage reaches the run
    here = ragmeter.evaluate(
        rows, JUDGED, judge="scripted", embedder="hashed", store="here", executor="local"
    )
    assert _stored(there.run_id) == _stored(here.run_id)
    agents = [OPENAI, ANTHROPIC, OPENAI]
    there = ragmeter.evaluate(agents, METRICS, judge="scripted", store="agents-there")
    here = ragmeter.evaluate(
        agents, METRICS, judge="scripted", store="agents-here", executor="local"
    )
    assert len(_stored(there.run_id)) == 3 * 6
    assert _stored(there.run_id) == _stored(here.run_id)


def _done_rows(run_name: str) -> int:
    runs = RunStore(KnowledgeBase().store)
    try:
        return runs.find(run_name).done_rows
    except ragmeter.errors.NotFoundError:
        return 0


def _wait(predicate: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_killed_worker_costs_only_its_batch(
    cluster: str, home: Path, judge_server: ScriptedJudgeServer
) -> None:
    judge_server.latency_s = 0.5
    _config(home, judge_server, "\n[executor]\nbatch_rows = 2\n")
    rows = synthetic_rows(32)
    outcome: list[Any] = []

    def evaluate() -> None:
        outcome.append(
            ragmeter.evaluate(
                rows, "faithfulness", judge="scripted", store="killed", executor="ray"
            )
        )

    runner = threading.Thread(target=evaluate)
    runner.start()
    _wait(lambda: _done_rows("killed") >= 2 and ray_task_pids("_score_remote"))
    victim = ray_task_pids("_score_remote")[0]
    os.kill(victim, signal.SIGKILL)
    runner.join(120)
    assert not runner.is_alive()
    assert outcome, "the evaluation failed"
    stored = _stored(outcome[0].run_id)
    assert len(stored) == 32  # no row lost; a row stored twice would break the store's key
    judge_server.latency_s = 0.0
    here = ragmeter.evaluate(rows, "faithfulness", judge="scripted", store="here", executor="local")
    assert stored == _stored(here.run_id)


def test_a_killed_driver_resumes_with_only_the_missing_rows(
    cluster: str, home: Path, judge_server: ScriptedJudgeServer, tmp_path: Path
) -> None:
    judge_server.latency_s = 0.2
    _config(home, judge_server, f'\n[executor]\nbatch_rows = 2\naddress = "{cluster}"\n')
    rows = synthetic_rows(20)
    data = tmp_path / "rows.jsonl"
    data.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    env = {**os.environ, "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    command = [*RAGMETER, "eval", str(data), "-m", "faithfulness", "--judge-model", "scripted"]
    command.append("--no-cache")  # every row judged is asked of the judge server
    driver = subprocess.Popen(
        [*command, "--executor", "ray", "--name", "driven"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(lambda: _done_rows("driven") >= 4)
    finally:
        driver.kill()
        driver.wait()
    runs = RunStore(KnowledgeBase().store)
    run_id = runs.find("driven").id
    kept = runs.finished_rows(run_id)
    assert 4 <= len(kept) < 20
    judge_server.reset()
    resumed = subprocess.run(
        [*RAGMETER, "runs", "resume", "driven"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    stored = _stored(run_id)
    assert len(stored) == 20
    # the resume asked the judge about the rows missing from the store only
    asked = "\n".join(judge_server.prompts)
    judged = {i for i, row in enumerate(rows) if row["response"] in asked}
    assert judged == set(range(20)) - set(kept)
    judge_server.latency_s = 0.0
    here = ragmeter.evaluate(rows, "faithfulness", judge="scripted", store="here", executor="local")
    assert stored == _stored(here.run_id)


def test_the_cluster_never_passes_a_model_s_concurrency_even_when_its_permits_die(
    cluster: str, home: Path, judge_server: ScriptedJudgeServer
) -> None:
    """Two workers, each allowed 2 judge requests by its own limiter, share the model's 2
    through the permit actor, which is killed mid-run (Ray restarts it)."""
    judge_server.latency_s = 0.3
    model = "max_concurrency = 2\ntimeout = 3\n"
    _config(home, judge_server, "\n[executor]\nbatch_rows = 4\n")
    text = (home / "ragmeter.toml").read_text(encoding="utf-8")
    text = text.replace('model = "scripted"\n', f'model = "scripted"\n{model}', 1)
    (home / "ragmeter.toml").write_text(text, encoding="utf-8")
    rows = synthetic_rows(24)
    outcome: list[Any] = []

    def evaluate() -> None:
        outcome.append(
            ragmeter.evaluate(
                rows, "faithfulness", judge="scripted", store="permits", executor="ray"
            )
        )

    runner = threading.Thread(target=evaluate)
    runner.start()
    name = f"ragmeter-judge {judge_server.url} scripted"
    _wait(lambda: _done_rows("permits") >= 4)
    killed_at = time.time() + 0.5  # requests in flight then may arrive a little later
    ray.kill(ray.get_actor(name, namespace="ragmeter"), no_restart=False)
    runner.join(120)
    assert outcome, "the evaluation failed"
    assert len(_stored(outcome[0].run_id)) == 24
    after = [t for t in judge_server.arrivals if t > killed_at]
    assert after, "no request after the permits' actor was killed"
    assert judge_server.snapshot()["max_in_flight"] <= 2
    assert judge_server.snapshot()["chat_requests"] >= 24


def test_the_cluster_never_passes_a_model_s_requests_per_minute(
    cluster: str, home: Path, judge_server: ScriptedJudgeServer
) -> None:
    """Two workers judging a batch of 2 rows each share the model's ``requests_per_minute`` (set
    in ragmeter.toml as a user does): the judge server never sees more in any 60 seconds,
    and the run waits for the next minute rather than failing."""
    limit = 5
    _config(home, judge_server, "\n[executor]\nbatch_rows = 2\n")
    text = (home / "ragmeter.toml").read_text(encoding="utf-8")
    text = text.replace(
        'model = "scripted"\n', f'model = "scripted"\nrequests_per_minute = {limit}\n', 1
    )
    (home / "ragmeter.toml").write_text(text, encoding="utf-8")
    rows = synthetic_rows(4)  # 8 requests (faithfulness asks twice a row)
    started = time.time()
    outcome = ragmeter.evaluate(
        rows, "faithfulness", judge="scripted", store="rate", executor="ray"
    )
    took = time.time() - started
    assert len(_stored(outcome.run_id)) == 4
    arrivals = sorted(judge_server.arrivals)
    # the limit held the run back for one minute
    assert limit < len(arrivals) <= 2 * limit, [round(t - started, 2) for t in arrivals]
    most = max(sum(1 for t in arrivals if start <= t < start + 60.0) for start in arrivals)
    assert most <= limit
    assert took >= 60.0


def test_ray_is_imported_only_when_chosen(home: Path, tmp_path: Path) -> None:
    script = (
        "import sys, ragmeter\n"
        "rows = [{'query': 'q', 'retrieved_ids': ['a', 'b'], 'reference_ids': ['b']}]\n"
        "report = ragmeter.evaluate(rows, 'mrr')\n"
        "assert report.summary()['mrr']['mean'] == 0.5\n"
        "print('ray' in sys.modules)\n"
    )
    env = {**os.environ, "RAGMETER_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_an_unknown_executor_is_bad_input(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_bytes(orjson.dumps(_retrieval_rows(1)[0]) + b"\n")
    done = run("eval", str(data), "-m", "mrr", "--executor", "spark", home=home)
    assert done.returncode == 2
    assert "unknown executor 'spark': local or ray" in done.stderr


def test_cancel_stops_the_cluster_s_work(
    cluster: str, home: Path, judge_server: ScriptedJudgeServer
) -> None:
    judge_server.latency_s = 0.5
    _config(home, judge_server, "\n[executor]\nbatch_rows = 2\n")
    rows = synthetic_rows(60)
    outcome: list[Any] = []

    def evaluate() -> None:
        try:
            ragmeter.evaluate(rows, "faithfulness", judge="scripted", store="stop", executor="ray")
        except ragmeter.errors.RagmeterError as exc:
            outcome.append(exc)

    runner = threading.Thread(target=evaluate)
    runner.start()
    _wait(lambda: _done_rows("stop") >= 4)
    runs = RunStore(KnowledgeBase().store)
    run_id = runs.find("stop").id
    runs.request_cancel(run_id)
    runner.join(60)
    assert not runner.is_alive()
    assert outcome and "cancelled" in str(outcome[0])
    _wait(
        lambda: not ray_task_pids("_score_remote"), 10
    )  # the run's tasks were cancelled on the cluster
    gone = time.time()
    time.sleep(1.0)
    assert not [t for t in judge_server.arrivals if t > gone]  # no request after the stop
    assert runs.get(run_id).state == "cancelled"
    assert runs.get(run_id).done_rows < 60


def test_the_service_s_runs_go_to_the_configured_cluster(
    cluster: str, home: Path, judge_server: ScriptedJudgeServer
) -> None:
    from tests.integration.service import ServiceProcess, data, wait_run

    _config(home, judge_server, f'\n[executor]\nkind = "ray"\naddress = "{cluster}"\n')
    rows = [{"query": f"q {i}", "response": f"a {i}"} for i in range(6)]
    body = {
        "scene_key": "dataset",
        "evaluate_metrics": ["AnswerRelevancyMetric"],
        "context": {"model": "scripted"},
        "datasets": rows,
    }
    service = ServiceProcess(home).start()
    try:
        with service.client() as http:
            run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
            assert wait_run(http, run_id, timeout=120)["state"] == "done"
    finally:
        service.stop()
    assert len(_stored(run_id)) == 6
    # the run's judge took its permits on the cluster: the Ray executor drove it
    permits = ray.get_actor(f"ragmeter-judge {judge_server.url} scripted", namespace="ragmeter")
    assert ray.get(permits.stats.remote())["held"] == 0
