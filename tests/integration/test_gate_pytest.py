"""The pytest plugin in a real pytest run (a subprocess loading it with ``-p``, as the
``pytest11`` entry point does once installed): thresholds pass, 10% of the rows made worse
fails against a baseline results file with a message naming the rule, its numbers and the
worst rows with the judge's reason; JUnit XML and the markdown summary carry the gates; a
test per dataset row by the marker; under pytest-xdist the workers share one judge cache
and no request is sent twice."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.judge.cache import JudgeCache
from ragmeter.store.db import open_store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.gate_data import MARGIN, grounded_rows, worse_rows, write_rows
from tests.integration.helpers import ROOT, run, write_models

PLUGIN = "ragmeter.testing.pytest_plugin"

TESTS = f"""
import pytest

RULE = "faithfulness: delta >= {MARGIN}"


def test_thresholds(ragmeter):
    result = ragmeter.assert_metrics(
        "grounded.jsonl", ["faithfulness.mean >= 0.9", "faithfulness.ci95_low >= 0.8", "null_rate <= 0"]
    )
    assert result.passed and len(result.outcomes) == 3


def test_the_same_rows_pass_the_baseline(ragmeter):
    ragmeter.assert_metrics("grounded.jsonl", [RULE], baseline="base.results.jsonl")


def test_a_tenth_made_worse(ragmeter):
    ragmeter.assert_metrics("worse.jsonl", [RULE], baseline="base.results.jsonl")


@pytest.mark.ragmeter_rows("few.jsonl")
def test_each_row(ragmeter, ragmeter_row):
    ragmeter.assert_metrics([ragmeter_row], "faithfulness.mean >= 0.5")
"""


def _pytest(
    folder: Path, home: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGMETER_HOME": str(home), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("CI", None)  # the run's own outcome is what is checked, not our CI policy
    command = [sys.executable, "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider", *args]
    return subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def project(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, Path, ScriptedJudgeServer]]:
    folder = tmp_path_factory.mktemp("project")
    home = folder / "home"
    judge = ScriptedJudgeServer().start()
    write_models(home, judge.url)
    grounded = write_rows(folder / "grounded.jsonl", grounded_rows())
    write_rows(folder / "worse.jsonl", worse_rows())
    few = grounded_rows()[:4]
    few[2]["response"] = worse_rows()[0]["response"]
    write_rows(folder / "few.jsonl", few)
    done = run(
        "eval", str(grounded), "-m", "faithfulness", "--judge-model", "scripted",
        "--out", str(folder / "base.results.jsonl"), "--no-store", home=home,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (folder / "test_rag.py").write_text(TESTS, encoding="utf-8")
    yield folder, home, judge
    judge.stop()


def test_gates_pass_and_fail_with_the_rule_numbers_and_rows(
    project: tuple[Path, Path, ScriptedJudgeServer],
) -> None:
    folder, home, _judge = project
    junit, summary = folder / "out" / "junit.xml", folder / "out" / "gates.md"
    done = _pytest(
        folder, home, "--ragmeter-judge", "scripted", f"--junitxml={junit}",
        "--ragmeter-markdown", str(summary), "-o", "junit_family=xunit2",
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "2 failed, 5 passed" in output
    assert "FAILED test_rag.py::test_a_tenth_made_worse" in output
    assert "FAILED test_rag.py::test_each_row[r2]" in output
    # the message: the rule, its numbers and the worst rows with the judge's reason
    assert f"FAILED faithfulness: delta >= {MARGIN}: value -0." in output
    assert "95% CI [" in output and "pairs by id" in output
    assert "row 0: baseline 1 -> 0 (-1); query: " in output
    assert "response: 'It was first described in the year 1850" in output
    assert "reason: not supported: 'It was first described" in output
    assert "(not found in the contexts)" in output
    # JUnit: each test a case; the failed gates' messages and every gate's verdict property
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert len(cases) == 7 and "test_each_row[r0]" in cases
    failure = cases["test_a_tenth_made_worse"].find("failure")
    assert failure is not None and "FAILED faithfulness: delta" in (failure.get("message") or "")
    verdicts = {
        name: [p.get("value") for p in case.iter("property") if p.get("name") == "ragmeter_gate"]
        for name, case in cases.items()
    }
    assert verdicts["test_thresholds"] == ["passed"]
    assert verdicts["test_a_tenth_made_worse"] == ["failed: 1 rule(s)"]
    # markdown: one section per gate, the failed one with its regressed rows
    page = summary.read_text(encoding="utf-8")
    assert page.startswith("# ragmeter gates") and page.count("\n## `test_rag.py::") == 7
    section = page.split("## `test_rag.py::test_a_tenth_made_worse`")[1].split("\n## `")[0]
    assert "### ❌ ragmeter gate failed (1 of 1 rules)" in section
    assert "rows that regressed most" in section and "| 0 | " in section


def test_workers_share_one_judge_cache_and_send_no_request_twice(tmp_path: Path) -> None:
    folder, home = tmp_path, tmp_path / "home"
    write_rows(folder / "grounded.jsonl", grounded_rows())
    tests = textwrap.dedent(
        """
        import pytest

        @pytest.mark.parametrize("bound", [0.5, 0.6, 0.7, 0.8, 0.85, 0.9])
        def test_same_rows(ragmeter, bound):
            ragmeter.assert_metrics("grounded.jsonl", [f"faithfulness.mean >= {bound}"])
        """
    )
    (folder / "test_workers.py").write_text(tests, encoding="utf-8")
    with ScriptedJudgeServer(latency_ms=5) as judge:
        write_models(home, judge.url)
        summary = folder / "gates.md"
        done = _pytest(
            folder, home, "-n", "3", "--ragmeter-judge", "scripted",
            "--ragmeter-markdown", str(summary),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "6 passed" in done.stdout
        # the workers' gates reach the controller's summary, one section each
        page = summary.read_text(encoding="utf-8")
        assert page.count("\n## `test_workers.py::test_same_rows[") == 6
        assert page.count("### ✅ ragmeter gate passed") == 6
        asked = judge.snapshot().get("chat_requests", 0)
    cache = JudgeCache(open_store(f"sqlite:///{home / 'ragmeter.db'}"))
    assert asked > 0 and asked == cache.count()  # every request a distinct, cached one
    assert "3 workers" in done.stdout


def test_the_row_marker_needs_a_ragmeter_row_argument(tmp_path: Path) -> None:
    write_rows(tmp_path / "rows.jsonl", grounded_rows()[:2])
    (tmp_path / "test_bad.py").write_text(
        'import pytest\n\n@pytest.mark.ragmeter_rows("rows.jsonl")\ndef test_x():\n    pass\n',
        encoding="utf-8",
    )
    done = _pytest(tmp_path, tmp_path / "home")
    assert done.returncode != 0
    assert "gives each row as the ragmeter_row argument" in done.stdout + done.stderr


def test_repeats_gate_the_mean_and_name_the_rows_whose_repeats_disagree(tmp_path: Path) -> None:
    folder, home = tmp_path, tmp_path / "home"
    write_rows(folder / "rows.jsonl", grounded_rows()[:40])
    tests = textwrap.dedent(
        """
        def test_mean_of_repeats(ragmeter):
            result = ragmeter.assert_metrics("rows.jsonl", ["faithfulness.mean >= 0.5"], repeats=3)
            assert result.flaky and all(len(f.scores) == 3 for f in result.flaky)
            assert result.outcomes[0].value < 1.0

        def test_a_failed_gate_names_them(ragmeter):
            ragmeter.assert_metrics("rows.jsonl", ["faithfulness.mean >= 0.999"], repeats=3)
        """
    )
    (folder / "test_repeats.py").write_text(tests, encoding="utf-8")
    with ScriptedJudgeServer(noise=0.1, noise_seed=4) as judge:
        write_models(home, judge.url)
        done = _pytest(folder, home, "--ragmeter-judge", "scripted")
        asked = judge.snapshot().get("chat_requests", 0)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "1 failed, 1 passed" in output, output
    assert "FAILED faithfulness.mean >= 0.999" in output
    assert re.search(r"\d+ result\(s\) disagree between repeats", output)
    assert re.search(r"row \d+ faithfulness \([\d.]+, [\d.]+, [\d.]+\): '", output)
    cache = JudgeCache(open_store(f"sqlite:///{home / 'ragmeter.db'}"))
    assert asked == cache.count() and asked > 0  # three repeats, each asked once


def _entry_points_on_path(folder: Path) -> Path:
    """A distribution on ``folder`` declaring pyproject.toml's pytest11 entry points, as an
    installed ragmeter does (without installing into the shared environment)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    plugins = declared["project"]["entry-points"]["pytest11"]
    info = folder / "ragmeter_entry_points-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ragmeter-entry-points\nVersion: 0.0\n", encoding="utf-8"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in plugins.items())
    (info / "entry_points.txt").write_text(f"[pytest11]\n{lines}", encoding="utf-8")
    return folder


@pytest.mark.parametrize("extra", [[], ["-p", PLUGIN]], ids=["entry point", "and -p"])
def test_the_entry_point_loads_the_plugin_alone_or_beside_p(
    tmp_path: Path, extra: list[str]
) -> None:
    site = _entry_points_on_path(tmp_path / "site")
    (tmp_path / "test_loaded.py").write_text(
        "def test_fixture(ragmeter):\n    assert ragmeter.options == {'judge': 'j'}\n",
        encoding="utf-8",
    )
    env = {**os.environ, "RAGMETER_HOME": str(tmp_path / "home")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(site)])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra,
         "--ragmeter-judge", "j", "test_loaded.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
