"""Every agent and RAGAS-formula case of the peers' own tests (RAGAS's ToolCallAccuracy and
ToolCallF1, DeepEval's ToolCorrectnessMetric, RAGAS's answer correctness, context precision and
id-based precision and recall), given as the peer writes its sample, through three paths:
``ragmeter.evaluate``, ``ragmeter eval`` in a subprocess, and a real ``ragmeter serve``
receiving the row over HTTP. The judged cases' judge is a scripted OpenAI-compatible server on
127.0.0.1 answering with the case's own verdicts (pinned answers).

Each score is the peer's value, or for a case listed in docs/peer-differences.md ragmeter's
value as documented there; a failure names the case and the path. Without the peers' cases
beside the checkout the tests skip, which CI turns into a failure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import json_lines, run
from tests.integration.service import ServiceProcess, data
from tests.peer_suites._cases import (
    AGENT_FILES,
    MISSING,
    PeerCase,
    agent_cases,
    case_params,
    formula_value,
    given,
)
from tests.peer_suites._differences import read_differences

CASES = agent_cases()
DIFFERENCES = read_differences()
PARAMS = case_params(CASES, lambda case: case.id)


def _models(names: dict[str, str]) -> str:
    """ragmeter.toml naming each scripted server (URL by model name) as a chat and embedding
    model."""
    return "".join(
        f'[models.{name}]\nbase_url = "{url}"\nmodel = "scripted"\n\n'
        for name, url in names.items()
    )


@contextmanager
def _judge(case: PeerCase) -> Iterator[str | None]:
    """The URL of a scripted judge answering with the case's verdicts (None: no judge)."""
    if case.pinned is None:
        yield None
        return
    with ScriptedJudgeServer(pinned=case.pinned) as server:
        yield server.url


def test_every_file_was_read() -> None:
    if not CASES:
        pytest.skip(MISSING)
    assert len(CASES) == 19 + 9 + 13, "the peers' files changed: check the cases read"
    assert len({case.id for case in CASES}) == len(CASES)
    assert AGENT_FILES


def test_listed_differences_name_real_cases() -> None:
    """A row of the table that names a case of these files names one that exists."""
    if not CASES:
        pytest.skip(MISSING)
    ids = {case.id for case in CASES}
    files = {case_id.split("::")[0] for case_id in ids}
    stale = [k for k in DIFFERENCES if k.split("::")[0] in files and k not in ids]
    assert not stale, f"docs/peer-differences.md lists cases that do not exist: {stale}"


@pytest.mark.parametrize("case", PARAMS)
def test_python_api(case: PeerCase | None) -> None:
    case = given(case)
    with _judge(case) as url:
        options: dict[str, Any] = {}
        if url is not None:
            home = Path(os.environ["RAGMETER_HOME"])  # each test's own (tests/conftest.py)
            home.mkdir(parents=True, exist_ok=True)
            (home / "ragmeter.toml").write_text(_models({"pinned": url}), encoding="utf-8")
            options = {"judge": "pinned", "embedder": "pinned"}
        report = ragmeter.evaluate([case.row], [case.metric], **options)
    (result,) = list(report)
    case.check(result.score, DIFFERENCES.get(case.id), "Python API")
    if case.counts is not None:  # the formula itself, as RAGAS's test calls it
        case.check(formula_value(case), DIFFERENCES.get(case.id), "statement_f1")


@pytest.mark.parametrize("case", PARAMS)
def test_command_line(case: PeerCase | None, tmp_path: Path) -> None:
    case = given(case)
    rows, out = tmp_path / "rows.jsonl", tmp_path / "results.jsonl"
    rows.write_text(json.dumps(case.row) + "\n", encoding="utf-8")
    with _judge(case) as url:
        judge = [] if url is None else [
            "--judge-base-url", url, "--judge-model", "scripted",
            "--embedding-base-url", url, "--embedding-model", "scripted", "--no-cache",
        ]  # fmt: skip
        done = run("eval", str(rows), "-m", case.metric, "--out", str(out), *judge)
    listed = DIFFERENCES.get(case.id)
    no_score = listed is not None and listed.ours is None
    # exit 1: a run where no result has a score
    assert done.returncode == (1 if no_score else 0), (case.id, done.stdout, done.stderr)
    (line,) = json_lines(out.read_text(encoding="utf-8"))
    case.check(line["score"], listed, "command line")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServiceProcess, dict]]:
    """One ``ragmeter serve`` (keyless, 127.0.0.1) whose models are one scripted judge per
    judged case, each answering with that case's verdicts."""
    judged = [case for case in CASES if case.pinned is not None]
    with ExitStack() as stack:
        names: dict[str, str] = {}
        urls: dict[str, str] = {}
        for number, case in enumerate(judged):
            server = stack.enter_context(ScriptedJudgeServer(pinned=case.pinned))
            names[case.id], urls[f"case{number}"] = f"case{number}", server.url
        home = tmp_path_factory.mktemp("peer-service")
        (home / "ragmeter.toml").write_text(_models(urls), encoding="utf-8")
        process = stack.enter_context(ServiceProcess(home, keys=None))
        yield process, names


@pytest.mark.parametrize("case", PARAMS)
def test_service(case: PeerCase | None, service: tuple[ServiceProcess, dict[str, str]]) -> None:
    case = given(case)
    process, names = service
    body: dict[str, Any] = {
        "scene_key": "dataset",
        "evaluate_metrics": [case.metric],
        "datasets": [case.row],
    }
    if case.id in names:
        body["context"] = {"model": names[case.id], "embedding_model": names[case.id]}
    with process.client(None) as http:
        found = data(http.post("/evaluate/evaluation", json=body))
    ((result,),) = found
    case.check(result["score"], DIFFERENCES.get(case.id), "service")
