"""A Ray cluster a user started (``ray start --head`` with token authentication, on loopback)
reached by ragmeter commands through Ray Client (``--ray-address ray://HOST:PORT``) and through
``auto``: an eval scores as the local executor does and a space add stores what a local add
does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import orjson
import pytest

import ragmeter
from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.storage.store import RunStore
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.conftest import RayHead
from tests.integration.helpers import RAGMETER, dbgpt_docs, run, write_models
from tests.integration.test_ray_executor import _retrieval_rows, _stored
from tests.integration.test_ray_ingest import _chunks

METRICS = "faithfulness,context_recall"


def _ragmeter(*args: str, home: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``ragmeter ARGS`` with exactly ``env`` (not this process's: a ``ray.init()`` of another
    test module leaves ``RAY_AUTH_MODE=token`` in it)."""
    env = {**env, "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    return subprocess.run([*RAGMETER, *args], capture_output=True, text=True, env=env, timeout=300)


def _data(tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    rows = synthetic_rows(6)
    data = tmp_path / "rows.jsonl"
    data.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    return data, rows


def _eval(data: Path, home: Path, head: RayHead, address: str, name: str, *, mode: bool) -> None:
    done = _ragmeter(
        "eval", str(data), "-m", METRICS, "--judge-model", "scripted", "--embedding-model",
        "hashed", "--executor", "ray", "--ray-address", address, "--name", name,
        home=home, env=head.env(mode=mode),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr + head.client_logs()


def test_an_eval_through_ray_client_scores_as_the_local_executor(
    ray_head: RayHead, home: Path, judge_server: ScriptedJudgeServer, tmp_path: Path
) -> None:
    write_models(home, judge_server.url)
    data, rows = _data(tmp_path)
    _eval(data, home, ray_head, ray_head.client, "client", mode=True)
    assert judge_server.snapshot()["chat_requests"] >= 6  # the cluster's workers asked
    here = ragmeter.evaluate(
        rows, METRICS, judge="scripted", embedder="hashed", store="here", executor="local"
    )
    stored = _stored(_run_id("client"))
    assert len(stored) == 6 * 2
    assert stored == _stored(here.run_id)


def test_auto_finds_the_cluster_with_its_token_alone(
    ray_head: RayHead, home: Path, judge_server: ScriptedJudgeServer, tmp_path: Path
) -> None:
    write_models(home, judge_server.url)
    data, rows = _data(tmp_path)
    # on auto Ray turns token authentication on by itself where it finds a token
    _eval(data, home, ray_head, "auto", "auto", mode=False)
    here = ragmeter.evaluate(
        rows, METRICS, judge="scripted", embedder="hashed", store="here", executor="local"
    )
    assert _stored(_run_id("auto")) == _stored(here.run_id)


def test_an_explicit_address_without_ray_auth_mode_is_refused_with_a_hint(
    ray_head: RayHead, home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_bytes(b"\n".join(orjson.dumps(r) for r in _retrieval_rows(3)) + b"\n")
    refused = _ragmeter(
        "eval", str(data), "-m", "mrr", "--executor", "ray", "--ray-address", ray_head.client,
        home=home, env=ray_head.env(mode=False),
    )  # fmt: skip
    assert refused.returncode == 2, refused.stdout + refused.stderr  # bad input
    assert "cannot reach the Ray cluster" in refused.stderr
    assert "resume" not in refused.stderr  # told before a run was made
    assert "RAY_AUTH_MODE=token" in refused.stderr


def test_evaluate_from_python_is_refused_before_a_run_is_made(
    ray_head: RayHead, home: Path
) -> None:
    script = (
        "import ragmeter, sys\n"
        "rows = [{'query': 'q', 'retrieved_ids': ['a'], 'reference_ids': ['a']}]\n"
        "try:\n"
        "    ragmeter.evaluate(rows, 'mrr', executor='ray', ray_address=sys.argv[1], store='x')\n"
        "except ragmeter.RagmeterError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    env = {**ray_head.env(mode=False), "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [RAGMETER[0], "-c", script, ray_head.client], capture_output=True, text=True, env=env,
        timeout=300,
    )  # fmt: skip
    assert done.stdout.startswith("ConfigError cannot reach the Ray cluster"), done.stderr
    listed = _ragmeter("runs", "list", "--json", home=home, env=env)
    assert listed.returncode == 0 and orjson.loads(listed.stdout) == []  # no run was made


def test_a_space_add_through_ray_client_equals_a_local_add(
    ray_head: RayHead, home: Path, tmp_path: Path
) -> None:
    docs = dbgpt_docs()
    if docs is None:
        pytest.fail("DB-GPT's docs corpus (shared/corpora/dbgpt-docs) is not beside the checkout")
    folder = tmp_path / "docs"
    shutil.copytree(docs / "en" / "faq", folder)
    for space in ("here", "there"):
        made = run("space", "create", space, home=home)
        assert made.returncode == 0, made.stderr
    local = run("space", "add", "here", str(folder), home=home)
    assert local.returncode == 0, local.stderr
    remote = _ragmeter(
        "space", "add", "there", str(folder), "--executor", "ray", "--ray-address",
        ray_head.client, home=home, env=ray_head.env(),
    )  # fmt: skip
    assert remote.returncode == 0, remote.stdout + remote.stderr + ray_head.client_logs()
    here, there = _chunks("here"), _chunks("there")
    assert len(there) == len(here) > 3
    assert [c[:3] for c in there] == [c[:3] for c in here]
    for mine, theirs in zip(here, there, strict=True):
        np.testing.assert_allclose(theirs[3], mine[3], atol=1e-5)


def _run_id(name: str) -> str:
    return RunStore(KnowledgeBase().store).find(name).id
