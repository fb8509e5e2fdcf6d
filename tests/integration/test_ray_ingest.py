"""Documents added to a space on a Ray cluster of this machine (2 CPUs, loopback), started by
this module: the same documents, chunks and vectors as a local add of the same folder, stored
batch by batch by the command, unchanged files skipped on a second add, and the space
searchable after."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select

from ragmeter.errors import NotFoundError
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.execution.ray_ingest import FILES_PER_TASK
from ragmeter.store.models import ChunkRecord, DocumentRecord
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import RAGMETER, dbgpt_docs, ray_task_pids, run, write_models


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A dozen of DB-GPT's English pages, in two subfolders."""
    docs = dbgpt_docs()
    if docs is None:
        pytest.skip("DB-GPT's docs corpus (shared/corpora/dbgpt-docs) is not beside the checkout")
    out = tmp_path / "docs"
    for part in ("faq", "api"):
        shutil.copytree(docs / "en" / part, out / part)
    return out


def _chunks(space: str) -> list[tuple[str, int, str, Any]]:
    """The space's chunks: document, position, text and vector."""
    kb = KnowledgeBase()
    info = kb.space(space)
    with kb.store.session() as session:
        found = session.execute(
            select(
                DocumentRecord.name,
                ChunkRecord.position,
                ChunkRecord.content,
                ChunkRecord.embedding,
            )
            .join(DocumentRecord, ChunkRecord.document_id == DocumentRecord.id)
            .where(ChunkRecord.space_id == info.id)
            .order_by(DocumentRecord.name, ChunkRecord.position)
        ).all()
    return [(d, p, c, np.frombuffer(e, dtype=np.float32)) for d, p, c, e in found]


def test_a_folder_added_on_the_cluster_equals_a_local_add(
    cluster: str, home: Path, folder: Path
) -> None:
    for space in ("here", "there"):
        made = run("space", "create", space, home=home)
        assert made.returncode == 0, made.stderr
    local = run("space", "add", "here", str(folder), home=home)
    assert local.returncode == 0, local.stderr
    remote = run(
        "space", "add", "there", str(folder), "--executor", "ray", "--ray-address", cluster,
        home=home,
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    files = len(list(folder.rglob("*.md")))
    assert f"added {files}" in remote.stdout, remote.stdout
    here, there = _chunks("here"), _chunks("there")
    assert len(there) == len(here) > files
    assert [c[:3] for c in there] == [c[:3] for c in here]  # documents, positions, texts
    for mine, theirs in zip(here, there, strict=True):
        np.testing.assert_allclose(theirs[3], mine[3], atol=1e-5)

    again = run(
        "space", "add", "there", str(folder), "--executor", "ray", "--ray-address", cluster,
        home=home,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"unchanged {files}" in again.stdout, again.stdout
    assert len(_chunks("there")) == len(there)

    found = run("space", "search", "there", "how to install", "--json", home=home)
    assert found.returncode == 0, found.stderr
    assert found.stdout.count('"rank"') == 5


def test_a_ray_address_without_the_ray_executor_is_bad_input(home: Path, folder: Path) -> None:
    made = run("space", "create", "docs", home=home)
    assert made.returncode == 0, made.stderr
    local = run("space", "add", "docs", str(folder), "--ray-address", "auto", home=home)
    assert local.returncode == 2, local.stdout + local.stderr
    assert "add --executor ray" in local.stderr


def test_cuda_reserves_gpus_and_a_cluster_without_one_is_refused_before_a_task(
    cluster: str, home: Path, folder: Path
) -> None:
    """On ``cuda`` each task reserves ``[executor] gpus_per_task`` GPUs of the cluster:
    this one has none, so the add is refused before a task is sent (Ray would keep it waiting
    for ever); with a GPU the add succeeds and stores vectors."""
    import torch

    made = run("space", "create", "docs", home=home)
    assert made.returncode == 0, made.stderr
    (home / "ragmeter.toml").write_text('[knowledge]\ndevice = "cuda"\n', encoding="utf-8")
    added = run(
        "space", "add", "docs", str(folder), "--executor", "ray", "--ray-address", cluster,
        home=home,
    )  # fmt: skip
    if torch.cuda.is_available():
        assert added.returncode == 0, added.stderr
        assert len(_chunks("docs")) > 0
        return
    assert added.returncode == 2, added.stdout + added.stderr  # bad input
    assert "device 'cuda': each Ray task reserves 1 GPU ([executor] gpus_per_task)" in added.stderr
    assert "the cluster has 0" in added.stderr and "_prepare_remote" not in added.stderr
    assert _chunks("docs") == []


def _documents(space: str) -> int:
    kb = KnowledgeBase()
    try:
        info = kb.space(space)
    except NotFoundError:
        return 0
    with kb.store.session() as session:
        found = session.execute(
            select(func.count())
            .select_from(DocumentRecord)
            .where(DocumentRecord.space_id == info.id)
        ).scalar_one()
    return int(found)


def _said(pattern: re.Pattern[str], out: str) -> str:
    found = pattern.search(out)
    assert found is not None, out
    return found[0]


def test_an_add_survives_a_killed_worker(
    cluster: str, home: Path, judge_server: ScriptedJudgeServer, tmp_path: Path
) -> None:
    docs = dbgpt_docs()
    if docs is None:
        pytest.fail("DB-GPT's docs corpus (shared/corpora/dbgpt-docs) is not beside the checkout")
    folder = tmp_path / "many"
    shutil.copytree(docs / "en", folder)
    files = len(list(folder.rglob("*.md")))
    assert files > 4 * FILES_PER_TASK  # several tasks, two at a time on 2 CPUs
    write_models(home, judge_server.url)
    for space in ("here", "there"):
        made = run("space", "create", space, "--embedder", "hashed", home=home)
        assert made.returncode == 0, made.stderr
    judge_server.latency_s = 0.2  # each embedding request: a task lasts some seconds
    command = [*RAGMETER, "space", "add", "there", str(folder), "--executor", "ray"]
    env = {**os.environ, "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    adding = subprocess.Popen(
        [*command, "--ray-address", cluster], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (_documents("there") > 0 and ray_task_pids("_prepare_remote")):
            assert adding.poll() is None, "the add ended before a worker could be killed"
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.05)
        os.kill(
            ray_task_pids("_prepare_remote")[0], signal.SIGKILL
        )  # a batch stored, another one running
        out, _ = adding.communicate(timeout=240)
    finally:
        adding.kill()
        adding.wait()
    assert adding.returncode == 0, out
    judge_server.latency_s = 0.0
    local = run("space", "add", "here", str(folder), home=home)
    assert local.returncode == 0, local.stderr
    counted = re.compile(r"added \d+, updated \d+, unchanged \d+, empty \d+, \d+ new chunks")
    assert _said(counted, out) == _said(
        counted, local.stdout
    )  # the same files added, nothing failed
    here, there = _chunks("here"), _chunks("there")
    assert _documents("there") == _documents("here") > 4 * FILES_PER_TASK
    assert len(there) == len(here) > files  # none lost, none doubled
    assert [c[:3] for c in there] == [c[:3] for c in here]
    for mine, theirs in zip(here, there, strict=True):
        np.testing.assert_allclose(theirs[3], mine[3], atol=1e-5)
