"""Runs code blocks marked ``<!-- offline -->`` as a reader would, offline, from an empty folder
(but for a link to the checkout's ``examples/``, whose server one block starts), after
``source .venv/bin/activate``: used by ``tests/test_readme.py`` and ``tests/test_docs_blocks.py``.

Bash blocks run with ``bash -e`` (a failing command fails the block), this venv's ``bin`` first
on ``PATH`` and ``$RAGMETER_HOME`` in a temp folder; what a block starts in the background
(``&``) is stopped after it. The fixed ports of the docs (8765, 8800) are swapped for free ones
so a test cannot collide with a server already running. Python blocks are executed in this
process, in the same folder.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.service import free_port
from tests.readme_blocks import ROOT, Block

__all__ = ["Folder", "make_folder", "run_block"]

#: output that means a block did not really work although it exited 0
_BROKEN = ("Traceback (most recent call last)", "scripted reply:")


@dataclass
class Folder:
    work: Path
    home: Path
    env: dict[str, str]
    ports: dict[str, str]


def make_folder(root: Path) -> Folder:
    """An empty working folder under ``root`` (``examples/`` linked in) and its environment."""
    work = root / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    home = root / "home"
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "RAGMETER_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT / "src"),  # this checkout's sources, whatever the venv installed
        "COLUMNS": "160",
        "NO_COLOR": "1",
    }
    return Folder(work, home, env, {"8765": str(free_port()), "8800": str(free_port())})


def _stop_group(proc: subprocess.Popen[str]) -> None:
    """Stop the block's shell and everything it started in the background."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _run_bash(block: Block, folder: Folder) -> str:
    code = block.code
    for port, free in folder.ports.items():
        code = code.replace(port, free)
    log = folder.work / f".block-{block.path.stem}-{block.line}.log"
    with log.open("w", encoding="utf-8") as handle:  # not a pipe: background jobs keep it open
        proc = subprocess.Popen(
            ["bash", "-e", "-c", code],
            cwd=folder.work,
            env=folder.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, to stop its background jobs after
        )
        try:
            proc.wait(timeout=900)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{block} did not finish in 900 s:\n{log.read_text()[-4000:]}")
        finally:
            _stop_group(proc)
    out = log.read_text(encoding="utf-8")
    assert proc.returncode == 0, f"{block} exited {proc.returncode}:\n{out[-6000:]}"
    return out


def _run_python(block: Block, folder: Folder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder.work)
    monkeypatch.setenv("RAGMETER_HOME", str(folder.home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = compile("\n" * (block.line - 1) + block.code, str(block.path), "exec")
    exec(code, {"__name__": "__readme__"})


def run_block(block: Block, folder: Folder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run one block in ``folder``; fail on a non-zero exit or a sign of a broken run."""
    if block.lang == "python":
        _run_python(block, folder, monkeypatch)
        return
    out = _run_bash(block, folder)
    for sign in _BROKEN:
        assert sign not in out, f"{block} printed {sign!r}:\n{out[-6000:]}"
