"""Start-up stays light: ``import ragmeter``, ``ragmeter --help`` and ``ragmeter metrics`` load
none of the heavy libraries, which load on first use. Each check runs in a fresh interpreter
and reads ``sys.modules`` (what was loaded, not how long it took)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.cli.app import _Commands
from ragmeter.testing import ScriptedJudgeServer

#: what only some commands need: the model runtime, the index, the store, the judge's SDK,
#: the server
HEAVY = (
    "torch",
    "sentence_transformers",
    "transformers",
    "faiss",
    "sqlalchemy",
    "alembic",
    "openai",
    "fastapi",
)

_PROBE = """
import contextlib, io, json, sys
code, names = sys.argv[1], json.loads(sys.argv[2])
with contextlib.redirect_stdout(io.StringIO()):
    try:
        exec(code)
    except SystemExit:
        pass
heavy = sorted(name for name in names if name in sys.modules)
print(json.dumps({"heavy": heavy, "loaded": len(sys.modules)}))
"""


def loaded_after(code: str, names: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``names`` a fresh interpreter holds after running ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, code, json.dumps(names)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])["heavy"]
    return found


#: the command line as ``main`` runs it; ``app`` itself, because ``main`` ends the process
#: (os._exit) before the probe could look
CLI = "from ragmeter.cli import app; sys.argv = ['ragmeter', *{args!r}]; app()"


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("import ragmeter", id="import ragmeter"),
        pytest.param(CLI.format(args=["--help"]), id="ragmeter --help"),
        pytest.param(CLI.format(args=["metrics"]), id="ragmeter metrics"),
        pytest.param(CLI.format(args=["eval", "--help"]), id="ragmeter eval --help"),
        pytest.param(
            "import ragmeter.embeddings, ragmeter.knowledge, ragmeter.judge, ragmeter.prompts",
            id="packages",
        ),
    ],
)
def test_start_up_loads_nothing_heavy(code: str) -> None:
    assert loaded_after(code) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check can fail: a name that needs the store loads SQLAlchemy."""
    assert "sqlalchemy" in loaded_after("from ragmeter.knowledge.spaces import KnowledgeBase")


def test_lazy_command_groups_list_their_own_help() -> None:
    """``--help`` lists the groups from a table without importing them; the table says what
    each group says of itself."""
    for name, entry in _Commands.lazy.items():
        sub = entry.load()
        assert sub.info.name == name
        assert entry.help == sub.info.help, name


@pytest.mark.parametrize("name", sorted(_Commands.lazy))
def test_a_lazy_group_runs_as_an_added_group(name: str) -> None:
    """Loaded on use, a group looks as ``add_typer`` made it: its commands, no completion
    options of its own (those belong to the root, which has none)."""
    from typer.testing import CliRunner

    from ragmeter.cli import app

    done = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "100"})
    assert done.exit_code == 0, done.output
    sub = _Commands.lazy[name].load()
    assert sub.registered_commands
    for command in sub.registered_commands:
        assert f" {command.name} " in done.output
    assert "--install-completion" not in done.output


def test_a_judged_run_without_a_space_loads_no_index_and_no_second_http_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the way to a stored run's first judge request: no FAISS (no space to search), no
    SDK (the judge speaks HTTP with httpx alone), and nothing else heavy."""
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path))
    rows = tmp_path / "rows.jsonl"
    row = {
        "query": "What is AWEL?",
        "response": "AWEL is a language.",
        "retrieved_contexts": ["AWEL"],
    }
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with ScriptedJudgeServer() as judge:
        args = ["eval", str(rows), "-m", "faithfulness", "--judge-model", "scripted"]
        args += ["--judge-base-url", judge.url]
        loaded = loaded_after(CLI.format(args=args), ("faiss", "httpx", "openai", "sqlalchemy"))
    assert loaded == ["httpx", "sqlalchemy"]  # the judge's HTTP client and the store
