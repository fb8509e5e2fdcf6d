"""``main`` ends the process itself once a command is done (skipping the slow teardown of
every module): the command's exit code, its whole output and the exit handlers all stay."""

from __future__ import annotations

import subprocess
import sys

_RUN = """
import atexit, sys, threading
atexit.register(lambda: print("exit handler ran", flush=False))
if {thread!r}:
    threading.Thread(target=lambda: (__import__("time").sleep(0.3), print("thread done"))).start()
from ragmeter.cli import main
sys.argv = ["ragmeter", *{args!r}]
print("x" * 100_000, end="\\n", flush=False)  # buffered output is flushed before the end
main()
"""


def _run(args: list[str], thread: bool = False) -> subprocess.CompletedProcess[str]:
    code = _RUN.format(args=args, thread=thread)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_command_that_succeeds_exits_0_with_its_output_and_exit_handlers() -> None:
    done = _run(["--version"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "x" * 100_000
    assert lines[1].startswith("ragmeter ")
    assert lines[-1] == "exit handler ran"


def test_a_command_that_fails_keeps_its_exit_code() -> None:
    done = _run(["eval", "missing.jsonl", "-m", "mrr"])
    assert done.returncode == 2
    assert "error:" in done.stderr
    assert done.stdout.splitlines()[-1] == "exit handler ran"


def test_a_thread_still_running_is_waited_for() -> None:
    """Another thread still running: the normal exit, which waits for it."""
    done = _run(["--version"], thread=True)
    assert done.returncode == 0, done.stderr
    assert "thread done" in done.stdout.splitlines()
