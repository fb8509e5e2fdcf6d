"""Running the ``ragmeter`` command as a user does, and small test corpora."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RAGMETER = [sys.executable, "-m", "ragmeter"]


def run(
    *args: str,
    home: Path | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``ragmeter ARGS`` in a subprocess (offline, wide, no colour), in ``home`` if given,
    with ``env`` added to the environment."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    if home is not None:
        env["RAGMETER_HOME"] = str(home)
    return subprocess.run(
        [*RAGMETER, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def dbgpt_docs() -> Path | None:
    """DB-GPT's documentation corpus: ``$RAGMETER_DBGPT_DOCS``, or ``shared/corpora/dbgpt-docs``
    beside the checkout or in the workspace, if present."""
    given = os.environ.get("RAGMETER_DBGPT_DOCS")
    places = [Path(given)] if given else []
    places += [p / "shared" / "corpora" / "dbgpt-docs" for p in (ROOT, *ROOT.parents)]
    places.append(Path("/work/shared/corpora/dbgpt-docs"))  # the workspace's shared folder
    return next((p for p in places if p.is_dir()), None)


def write_models(home: Path, url: str) -> None:
    """A ``ragmeter.toml`` naming the scripted server as model ``scripted`` (chat) and as
    embedding model ``hashed``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "ragmeter.toml").write_text(
        f'[models.scripted]\nbase_url = "{url}"\nmodel = "scripted"\n\n'
        f'[models.hashed]\nbase_url = "{url}"\nmodel = "hashed-words"\n',
        encoding="utf-8",
    )


@contextmanager
def scripted_home(folder: Path, extra_config: str = "") -> Iterator[Path]:
    """``folder`` as a ``$RAGMETER_HOME`` whose models are a scripted server (running while
    the context lasts), with ``extra_config`` (a ``[server]`` section) added to its toml."""
    from ragmeter.testing import ScriptedJudgeServer

    with ScriptedJudgeServer() as judge:  # serves the 'hashed' embedder too
        write_models(folder, judge.url)
        with (folder / "ragmeter.toml").open("a", encoding="utf-8") as config:
            config.write(extra_config)
        yield folder


GUIDE_AWEL = """# What is AWEL?

AWEL is a workflow expression language for building LLM applications.

## AWEL Design

AWEL is divided into an operator layer, an AgentFream layer and a DSL layer.

## Executable environment

AWEL workflows run in a stand-alone environment or on a Ray cluster.
"""

NOTES_AWEL = """# AWEL notes

Operators such as MapOperator and JoinOperator are the building blocks of a DAG.
"""

TEA = """# 泡茶指南

## 绿茶

绿茶怕烫，水温以八十到八十五度为宜。

## 乌龙茶

乌龙茶要用沸水冲泡，可以连续冲泡七到八次。
"""


def write_corpus(folder: Path) -> Path:
    """guide/awel.md, notes/awel.md (same file name), guide/tea.md (Chinese), page.html,
    readme.txt, an empty file and an unsupported one."""
    (folder / "guide").mkdir(parents=True)
    (folder / "notes").mkdir()
    (folder / "guide" / "awel.md").write_text(GUIDE_AWEL, encoding="utf-8")
    (folder / "notes" / "awel.md").write_text(NOTES_AWEL, encoding="utf-8")
    (folder / "guide" / "tea.md").write_text(TEA, encoding="utf-8")
    (folder / "page.html").write_text(
        "<html><body><h1>Ray</h1><p>Ray runs distributed Python workloads.</p></body></html>",
        encoding="utf-8",
    )
    (folder / "readme.txt").write_text("Compost heaps need air and water.\n", encoding="utf-8")
    (folder / "empty.md").write_text("# Only a title\n", encoding="utf-8")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "secret.md").write_text("# hidden\n\nnot added\n", encoding="utf-8")
    return folder


def stored_run(
    rows: list[dict[str, Any]], metrics: list[str], records: list[Any]
) -> tuple[Any, str]:
    """A finished run of ``rows`` in the configured store, its results ``records``
    (``ResultRecord``s) committed at once: (its ``RunStore``, its id)."""
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.runs.planning.request import EvaluateServeRequest, config_from_request
    from ragmeter.runs.storage.store import RunStore

    runs = RunStore(KnowledgeBase().store)
    dataset = runs.add_dataset(rows)
    request = EvaluateServeRequest(scene_key="dataset", evaluate_metrics=metrics, datasets=rows)
    run_id = runs.create(config_from_request(request), metrics, dataset.id, len(rows), {}).id
    runs.commit_rows(run_id, records, {})
    return runs, run_id


def ray_task_pids(task: str) -> list[int]:
    """Ray worker processes running remote function ``task`` now (Ray titles a worker after
    the task it runs: ``ray::NAME``)."""
    title = f"ray::{task}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if line.startswith(title):
                found.append(int(entry.name))
    return found
