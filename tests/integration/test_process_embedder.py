"""The local model in a helper process (``ragmeter eval`` with a judge): the same vectors as
in this process, a clear error when the helper is gone, and no helper left behind: not after
``close``, not when its parent dies, not after the command (done or stopped by Ctrl-C)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ragmeter
from ragmeter.demo.judge_rows import synthetic_rows
from ragmeter.embeddings import LocalEmbedder
from ragmeter.embeddings.process import ProcessEmbedder
from ragmeter.errors import EmbeddingError
from ragmeter.judge.from_config import judge_from_config
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import RAGMETER

pytestmark = pytest.mark.slow

TEXTS = ["How do I turn a compost heap?", "如何翻动堆肥？", "word " * 400, "", "a"]
EMBEDDING_METRICS = "answer_relevancy,answer_correctness"


def _ended(pid: int) -> bool:
    """Whether process ``pid`` is gone (or a zombie nobody reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def _wait_ended(pid: int) -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _ended(pid):
        time.sleep(0.1)
    return _ended(pid)


def _helpers_of(home: Path) -> list[int]:
    """Helper processes started by a command that ran with ``RAGMETER_HOME=home``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or _ended(int(entry.name)):
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"ragmeter.embeddings.process" in command and str(home).encode() in environ:
            found.append(int(entry.name))
    return found


def test_the_helper_gives_the_local_vectors_and_ends_on_close() -> None:
    helper = ProcessEmbedder()
    try:
        ours = helper.embed_sync(TEXTS)
        assert helper.embed_sync([]).shape == (0, 384)

        async def concurrently() -> list[np.ndarray]:
            return list(await asyncio.gather(*(helper.embed([t]) for t in TEXTS)))

        one_by_one = np.concatenate(asyncio.run(concurrently()))
    finally:
        helper.close()
    here = LocalEmbedder().embed_sync(TEXTS)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, here, atol=1e-5)
    np.testing.assert_allclose(one_by_one, here, atol=1e-5)
    assert helper._helper.poll() is not None


def test_a_helper_that_died_is_an_embedding_error_naming_it() -> None:
    helper = ProcessEmbedder()
    try:
        helper._helper.kill()
        with pytest.raises(EmbeddingError, match="local embedding process stopped"):
            helper.embed_sync(["a"])
    finally:
        helper.close()


def test_the_helper_ends_with_its_parent() -> None:
    code = (
        "import os\nfrom ragmeter.embeddings.process import ProcessEmbedder\n"
        "helper = ProcessEmbedder()\nhelper.embed_sync(['warm'])\n"
        "print(helper._helper.pid, flush=True)\nos._exit(0)  # no close: the parent just dies\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert _wait_ended(int(done.stdout.strip()))


def _eval_args(data: Path, judge: ScriptedJudgeServer) -> list[str]:
    return ["eval", str(data), "-m", EMBEDDING_METRICS, "--judge-model", "scripted",
            "--judge-base-url", judge.url, "--no-cache"]  # fmt: skip


def test_eval_embeds_in_a_helper_with_the_same_scores_and_leaves_none(
    tmp_path: Path, home: Path
) -> None:
    rows = synthetic_rows(6)
    data, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAGMETER_HOME": str(home)}
    with ScriptedJudgeServer() as judge:
        done = subprocess.run(
            [*RAGMETER, *_eval_args(data, judge), "--out", str(out)],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        engine = judge_from_config("scripted", base_url=judge.url, cache=False)
        here = ragmeter.evaluate(rows, EMBEDDING_METRICS, judge=engine)  # the model in-process
    assert _helpers_of(home) == []
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for name in EMBEDDING_METRICS.split(","):
        cli = [line["score"] for line in lines if line["metric_name"] == name]
        assert cli == pytest.approx(here.scores(name), abs=1e-6), name
        assert all(score is not None for score in cli), name


def test_ctrl_c_during_eval_keeps_rows_and_leaves_no_helper(tmp_path: Path, home: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in synthetic_rows(12)) + "\n", encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RAGMETER_HOME": str(home), "NO_COLOR": "1"}
    with ScriptedJudgeServer(latency_ms=1000) as judge:
        process = subprocess.Popen(
            [*RAGMETER, *_eval_args(data, judge), "--max-concurrency", "1"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if judge.snapshot().get("chat_requests", 0) >= 9:  # some row is done
                break
            time.sleep(0.2)
        helpers = _helpers_of(home)
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "ragmeter runs resume" in err
    assert len(helpers) == 1
    assert _wait_ended(helpers[0])


def test_where_no_helper_can_start_the_model_runs_in_process(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.cli.evaluate import _embed_in_helper
    from ragmeter.runs.planning.config import EvaluationConfig, JudgeConfig
    from ragmeter.runs.planning.plan import build_plan

    config = EvaluationConfig(
        metrics=tuple(EMBEDDING_METRICS.split(",")),
        judge=JudgeConfig(model="scripted", base_url="http://127.0.0.1:9/v1", cache=False),
    )
    plan = build_plan(config, synthetic_rows(2))

    def cannot_start(*_args: object, **_kwargs: object) -> None:
        raise FileNotFoundError("no interpreter")

    monkeypatch.setattr(subprocess, "Popen", cannot_start)
    assert _embed_in_helper([plan]) is None
    assert plan.embedder is None  # the batcher's in-process LocalEmbedder, as before
