"""``docs/ci.md`` runs as written, offline, with the scripted judge: its offline block makes the
baseline; its GitHub Actions workflow's ``run`` steps, run in order as the runner would (``bash
-eo pipefail``, the workflow's env, ``$GITHUB_STEP_SUMMARY``), pass on the baseline's own rows
and fail on rows a tenth of which were made worse, while the steps marked ``if: always()``
still write the HTML report and the summary. The steps that need GitHub (checkout, install,
cache, upload, the pull-request comment) are checked for what they say, not run."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from tests.integration.gate_data import grounded_rows, worse_rows, write_rows
from tests.integration.service import free_port
from tests.readme_blocks import offline_blocks

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ci.md"
ROWS = 60


def _workflow() -> dict[Any, Any]:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"^```yaml\n(name: rag-gate\n.*?)^```$", text, re.M | re.S)
    assert found is not None, "docs/ci.md has no rag-gate workflow"
    loaded: dict[Any, Any] = yaml.safe_load(found.group(1))
    return loaded


@dataclass
class Workspace:
    folder: Path
    env: dict[str, str]
    port: str
    started: list[int]


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    folder = tmp_path / "repo"
    (folder / "eval").mkdir(parents=True)
    write_rows(folder / "eval" / "rows.jsonl", grounded_rows()[:ROWS])
    port = str(free_port())
    workflow = _workflow()
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT / "src"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
        "COLUMNS": "160",
        "NO_COLOR": "1",
    }
    for name, value in workflow["env"].items():
        value = str(value).replace("${{ github.workspace }}", str(folder))
        env[name] = value.replace("8765", port)
    started: list[int] = []
    yield Workspace(folder, env, port, started)
    _stop(started)


def _bash(code: str, space: Workspace, flags: str = "-eo pipefail") -> tuple[int, str]:
    """``code`` run as a step: its own process group (stopped after the test), its output."""
    log = space.folder / f".step-{len(space.started)}.log"
    with log.open("w", encoding="utf-8") as handle:
        proc = subprocess.Popen(
            [
                "bash",
                "--noprofile",
                "--norc",
                *flags.split(),
                "-c",
                code.replace("8765", space.port),
            ],
            cwd=space.folder,
            env=space.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        space.started.append(proc.pid)
        proc.wait(timeout=600)
    return proc.returncode, log.read_text(encoding="utf-8")


def _steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = workflow["jobs"]["gate"]["steps"]
    return steps


def _run_job(space: Workspace) -> tuple[dict[str, int], dict[str, str]]:
    """Each ``run`` step the runner would run here, in order: a failed step skips the steps
    after it unless they say ``if: always()``. Each run step's exit code and output by name."""
    workflow = _workflow()
    assert workflow["jobs"]["gate"]["defaults"]["run"]["shell"] == "bash"
    codes: dict[str, int] = {}
    outputs: dict[str, str] = {}
    for step in _steps(workflow):
        if "run" not in step:
            continue
        condition = str(step.get("if", ""))
        if "pull_request" in condition or step["run"].startswith("pip install"):
            continue  # needs GitHub, or installs what this checkout already is
        if any(codes.values()) and "always()" not in condition:
            continue
        codes[step["name"]], outputs[step["name"]] = _bash(step["run"], space)
    return codes, outputs


def test_the_workflow_says_what_github_needs() -> None:
    workflow = _workflow()
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true, as PyYAML does
    assert set(triggers) >= {"pull_request"}
    assert workflow["permissions"]["pull-requests"] == "write"
    steps = {s.get("name", s.get("uses")): s for s in _steps(workflow)}
    cache = steps["Restore the judge cache"]
    assert (
        cache["uses"].startswith("actions/cache@")
        and cache["with"]["path"] == ".ragmeter/ragmeter.db*"
    )
    assert workflow["env"]["RAGMETER_HOME"] == "${{ github.workspace }}/.ragmeter"
    upload = steps["Upload the report, results and gate outputs"]
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["if"] == "always()"
    comment = steps["Comment the summary on the pull request"]
    assert "gh pr comment" in comment["run"] and "--body-file out/gate.md" in comment["run"]


def test_the_offline_block_and_the_workflow_run_pass_then_fail(workspace: Workspace) -> None:
    rows, block = offline_blocks(DOC.read_text(encoding="utf-8"))
    assert "cat > eval/rows.jsonl" in rows.code  # the page's two rows: the workspace has its own
    code, out = _bash(block.code, workspace, flags="-e")
    assert code == 0, out
    assert (workspace.folder / "eval" / "baseline.results.jsonl").is_file()
    assert "gate passed" in out
    _stop(workspace.started)  # the block's judge: the workflow starts its own on that port
    workspace.started.clear()
    # the pull request's rows are main's: every rule passes
    codes, outputs = _run_job(workspace)
    assert set(codes.values()) == {0}, (codes, outputs)
    folder = workspace.folder / "out"
    assert (folder / "report.html").stat().st_size > 1000
    summary = Path(workspace.env["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")
    assert summary.startswith("## ✅ ragmeter gate passed")
    suite = ET.parse(folder / "gate.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("4", "0")
    # a pull request whose answers got worse on a tenth of the rows
    _stop(workspace.started)
    workspace.started.clear()
    write_rows(workspace.folder / "eval" / "rows.jsonl", worse_rows()[:ROWS])
    Path(workspace.env["GITHUB_STEP_SUMMARY"]).unlink()
    codes, outputs = _run_job(workspace)
    assert codes["Evaluate and gate"] == 1, (
        codes,
        outputs,
    )  # the rule's exit code, through the tee
    assert codes["HTML report"] == 0 and codes["Summary on the job page"] == 0
    summary = Path(workspace.env["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")
    assert summary.startswith("## ❌ ragmeter gate failed")
    assert "`faithfulness: delta >= -0.05`: rows that regressed most" in summary
    assert "It was first described in the year 1850" in summary
