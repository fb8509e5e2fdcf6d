"""The README's code blocks marked ``<!-- offline -->`` run as written, offline, in order, from an
empty folder (but for a link to the checkout's ``examples/``, whose server one block starts), as a
reader who copies them into a shell after ``source .venv/bin/activate`` would.

Bash blocks run with ``bash -e`` (a failing command fails the block), this venv's ``bin`` first
on ``PATH`` and ``$RAGMETER_HOME`` in a temp folder; what a block starts in the background
(``&``) is stopped after it. The fixed ports of the README (8765, 8800) are swapped for free
ones so the test cannot collide with a server already running. Python blocks are executed in
this process, in the same folder. Every file a block reads, it or a block before it writes.
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
from tests.readme_blocks import README, Block, offline_blocks

ROOT = Path(__file__).resolve().parents[1]
#: output that means a block did not really work although it exited 0
_BROKEN = ("Traceback (most recent call last)", "scripted reply:")


@dataclass
class Folder:
    work: Path
    home: Path
    env: dict[str, str]
    ports: dict[str, str]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Folder:
    root = tmp_path_factory.mktemp("readme")
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
    log = folder.work / f".block-{block.line}.log"
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
    code = compile("\n" * (block.line - 1) + block.code, str(README), "exec")
    exec(code, {"__name__": "__readme__"})


def test_the_readme_marks_its_offline_blocks() -> None:
    blocks = offline_blocks()
    first = blocks[0]
    assert first.lang == "bash" and first.code.startswith("cat > data.jsonl <<'EOF'\n")
    text = README.read_text(encoding="utf-8")
    row = text.index('```json\n{"query": ')  # a row's shape, shown before the first command
    assert row < text.index("<!-- offline -->\n```")
    for field in ("query", "response", "contexts", "retrieved_ids", "reference", "reference_ids"):
        assert f'"{field}": ' in text[row : text.index("```\n", row + 8)]
    assert not any("shared/corpora" in b.code for b in blocks)  # a reader has no ../shared
    assert "https://github.com/eosphoros-ai/DB-GPT/tree/main/docs" in text
    assert len(blocks) >= 10
    assert {b.lang for b in blocks} == {"bash", "python"}
    walkthrough = next(b for b in blocks if "judge-server" in b.code and "app add" in b.code)
    assert "model add scripted" in walkthrough.code and "~/.ragmeter" not in walkthrough.code


@pytest.mark.slow
@pytest.mark.parametrize("block", offline_blocks(), ids=str)
def test_offline_block_runs_as_written(
    block: Block, folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    if block.lang == "python":
        _run_python(block, folder, monkeypatch)
        return
    out = _run_bash(block, folder)
    for sign in _BROKEN:
        assert sign not in out, f"{block} printed {sign!r}:\n{out[-6000:]}"


def test_walkthrough_config_step_is_safe_twice(folder: Folder) -> None:
    """The walkthrough's config line, run again, changes nothing and breaks nothing."""
    block = next(b for b in offline_blocks() if "model add scripted" in b.code)
    line = next(x for x in block.code.splitlines() if x.startswith("ragmeter model add"))
    env = {**folder.env, "RAGMETER_HOME": str(folder.work / "twice-home")}
    for _ in range(2):
        subprocess.run(["bash", "-e", "-c", line], env=env, cwd=folder.work, check=True)
    text = (folder.work / "twice-home" / "ragmeter.toml").read_text(encoding="utf-8")
    assert text.count("[models.scripted]") == 1
    listed = subprocess.run(
        ["ragmeter", "model", "list"], env=env, capture_output=True, text=True, check=True
    )
    assert "scripted" in listed.stdout
