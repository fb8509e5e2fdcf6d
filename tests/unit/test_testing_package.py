"""The scripted judge lives in ``ragmeter.testing``, a test tool the judge never imports."""

from __future__ import annotations

import importlib.util
import subprocess
import sys


def test_the_scripted_judge_is_importable_from_ragmeter_testing() -> None:
    from ragmeter.testing import FaultPlan, ScriptedJudgeServer, parse_faults

    assert parse_faults("rate_limit=0.5") == FaultPlan(rate_limit=0.5)
    with ScriptedJudgeServer() as server:
        assert server.url.startswith("http://127.0.0.1:")


def test_no_module_is_left_at_the_old_path() -> None:
    assert importlib.util.find_spec("ragmeter.judge.scripted") is None


def test_the_judge_imports_no_test_tool() -> None:
    code = (
        "import sys, ragmeter.judge, ragmeter.judge.engine, ragmeter.judge.from_config; "
        "print(sorted(m for m in sys.modules if m.startswith('ragmeter.testing')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
