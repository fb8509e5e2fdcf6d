"""``ragmeter gate`` and ``ragmeter eval --rule`` as a user runs them, on demo-like rows judged
by two scripted judges that flip 5% of their verdicts (two samples of a noisy judge): a
candidate with 10% of its rows made worse fails the baseline rule naming the metric and the
rows, in the table, the JUnit XML and the markdown; the same rows judged again pass;
thresholds, [gate] in ragmeter.toml and the exit codes (0 pass, 1 fail, 2 bad input)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragmeter.runs.review.queues import make_queue
from ragmeter.runs.review.sampling import ReviewOptions
from ragmeter.runs.storage.review_queues import ReviewQueueStore
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import open_store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.gate_data import (
    MARGIN,
    NOISE,
    WORSE_EVERY,
    grounded_rows,
    worse_rows,
    write_rows,
)
from tests.integration.helpers import run

RULE = f"faithfulness: delta >= {MARGIN}"


@dataclass(frozen=True)
class Runs:
    home: Path
    judge_a: ScriptedJudgeServer
    judge_b: ScriptedJudgeServer
    base_id: str
    noise_id: str
    worse_id: str
    base: Path
    noise: Path
    worse: Path


def _eval(home: Path, data: Path, judge: ScriptedJudgeServer, out: Path, *extra: str) -> str:
    done = run(
        "eval", str(data), "-m", "faithfulness", "--judge-model", "scripted",
        "--judge-base-url", judge.url, "--out", str(out), *extra, home=home,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"run ([0-9a-f]{32}) stored", done.stdout)
    assert found is not None, done.stdout
    return found.group(1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    home = tmp_path_factory.mktemp("gate")
    grounded = write_rows(home / "grounded.jsonl", grounded_rows())
    worse = write_rows(home / "worse.jsonl", worse_rows())
    with (
        ScriptedJudgeServer(noise=NOISE, noise_seed=1) as judge_a,
        ScriptedJudgeServer(noise=NOISE, noise_seed=2) as judge_b,
    ):
        base_id = _eval(home, grounded, judge_a, home / "base.results.jsonl")
        noise_id = _eval(home, grounded, judge_b, home / "noise.results.jsonl")
        worse_id = _eval(home, worse, judge_b, home / "worse.results.jsonl")
        yield Runs(
            home, judge_a, judge_b, base_id, noise_id, worse_id,
            home / "base.results.jsonl", home / "noise.results.jsonl",
            home / "worse.results.jsonl",
        )  # fmt: skip


def _made_worse() -> set[int]:
    return set(range(0, 200, WORSE_EVERY))


def test_a_tenth_of_the_rows_made_worse_fails_naming_metric_and_rows(runs: Runs) -> None:
    junit, summary = runs.home / "out" / "gate.xml", runs.home / "out" / "gate.md"
    done = run(
        "gate", str(runs.worse), "--baseline", str(runs.base), "--rule", RULE,
        "--rule", "null_rate <= 0", "--junit", str(junit), "--markdown", str(summary),
        home=runs.home,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    table = re.search(r"faithfulness: delta >= -0\.05 .*", done.stdout)
    assert table is not None and "FAIL" in table.group(0)
    assert "gate failed: 1 rule(s)" in done.stdout
    printed = {int(i) for i in re.findall(r"^  row (\d+) \(", done.stdout, re.MULTILINE)}
    assert len(printed) == 5 and printed <= _made_worse()
    # JUnit: each rule a test case; the failed one lists the regressed rows
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {RULE, "null_rate <= 0"}
    failure = cases[RULE].find("failure")
    assert failure is not None and cases["null_rate <= 0"].find("failure") is None
    listed = [int(i) for i in re.findall(r"^row (\d+): baseline", failure.text or "", re.M)]
    assert len(listed) == 10 and set(listed) <= _made_worse()
    assert "not found in the contexts" in (failure.text or "")
    assert "pairs by id" in (failure.get("message", "") + (failure.text or ""))
    # markdown: the verdict, the rules table and the worst rows with the judge's reason
    page = summary.read_text(encoding="utf-8")
    assert page.startswith("## ❌ ragmeter gate failed (1 of 2 rules)")
    assert f"| `{RULE}` |" in page and "**FAIL**" in page
    rows = re.findall(r"^\| (\d+) \| .*\| 1 \| 0(?:\.\d+)? \| -", page, re.MULTILINE)
    assert len(rows) == 10 and {int(r) for r in rows} <= _made_worse()
    assert "It was first described in the year 1850" in page


def test_the_same_rows_judged_again_pass_by_stored_run_ids(runs: Runs) -> None:
    summary = runs.home / "noise.md"
    done = run(
        "gate", runs.noise_id, "--baseline", runs.base_id, "-r", RULE,
        "--markdown", str(summary), home=runs.home,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    page = summary.read_text(encoding="utf-8")
    assert "gate passed" in done.stdout and page.startswith("## ✅ ragmeter gate passed")
    assert f"candidate {runs.noise_id} against baseline {runs.base_id}" in page
    assert "200 pairs by id" in page and "Rows pair by row id." in page
    # the judges did disagree on some rows: the pass is not a comparison of equal runs
    worse = re.search(r"(\d+) rows worse, (\d+) better", page)
    assert worse is not None and int(worse.group(1)) > 0 and int(worse.group(2)) > 0


def test_thresholds_pass_and_fail_with_exit_codes(runs: Runs) -> None:
    passed = run(
        "gate", str(runs.base), "-r", "faithfulness.mean >= 0.9",
        "-r", "faithfulness.ci95_high <= 1", "-r", "null_rate <= 0.02", home=runs.home,
    )  # fmt: skip
    assert passed.returncode == 0, passed.stdout + passed.stderr
    failed = run("gate", str(runs.base), "-r", "faithfulness.ci95_low >= 0.99", home=runs.home)
    assert failed.returncode == 1 and "FAIL" in failed.stdout
    # the worst rows are shown with their scores
    assert re.search(r"^  row \d+ \(0\.\d+\) ", failed.stdout, re.MULTILINE)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-r", "faithfulness.mean >= high"], "gate rule 'faithfulness.mean >= high'"),
        (["-r", "mrr.mean >= 0.5"], "the run has no metric 'mrr'"),
        (["-r", RULE], "compares with a baseline: give --baseline"),
        (["-r", RULE, "--baseline", "nope.jsonl"], "no results file 'nope.jsonl'"),
        (["-r", RULE, "--baseline", "f00d"], "neither a results file nor a stored run"),
        ([], "no gate rule"),
    ],
)
def test_bad_input_exits_2_naming_it(runs: Runs, args: list[str], message: str) -> None:
    done = run("gate", str(runs.base), *args, home=runs.home)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in " ".join(done.stderr.split())


def test_rules_and_baseline_come_from_ragmeter_toml(runs: Runs, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ragmeter.toml").write_text(
        f'[gate]\nrules = ["{RULE}", "faithfulness.mean >= 0.5"]\nbaseline = "{runs.base}"\n',
        encoding="utf-8",
    )
    done = run("gate", str(runs.worse), home=home)
    assert done.returncode == 1 and "faithfulness.mean >= 0.5" in done.stdout
    # --rule replaces the rules of [gate]; its baseline stays
    done = run("gate", str(runs.noise), "-r", "faithfulness: delta >= -0.2", home=home)
    assert done.returncode == 0 and "delta >= -0.2" in done.stdout
    (home / "ragmeter.toml").write_text('[gate]\nrules = "mrr.mean >= 1"\n', encoding="utf-8")
    done = run("gate", str(runs.base), home=home)
    assert done.returncode == 2 and "gate.rules" in done.stderr


def test_eval_gates_right_after_the_run(runs: Runs) -> None:
    summary = runs.home / "eval-gate.md"
    before = runs.judge_b.snapshot().get("chat_requests", 0)
    done = run(
        "eval", str(runs.home / "worse.jsonl"), "-m", "faithfulness", "--judge-model",
        "scripted", "--judge-base-url", runs.judge_b.url, "--baseline", str(runs.base),
        "--rule", RULE, "--markdown", str(summary), home=runs.home,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gate failed" in done.stdout and summary.read_text().startswith("## ❌")
    # every judgement came from the cache the first evaluation filled
    assert runs.judge_b.snapshot().get("chat_requests", 0) == before
    bad = run(
        "eval", str(runs.home / "worse.jsonl"), "-m", "faithfulness", "--judge-model",
        "scripted", "--judge-base-url", runs.judge_b.url, "--no-cache", "--rule", "x >= 1",
        home=runs.home,
    )  # fmt: skip
    assert bad.returncode == 2 and "gate rule 'x >= 1'" in bad.stderr
    assert runs.judge_b.snapshot().get("chat_requests", 0) == before  # no judge was asked


def test_repeats_gate_the_mean_and_list_the_rows_whose_judgements_disagree(runs: Runs) -> None:
    summary = runs.home / "repeats.md"
    args = [
        "eval", str(runs.home / "grounded.jsonl"), "-m", "faithfulness", "--judge-model",
        "scripted", "--judge-base-url", runs.judge_b.url, "--repeats", "3", "--no-store",
        "--baseline", str(runs.base), "--rule", RULE, "--markdown", str(summary),
    ]  # fmt: skip
    before = runs.judge_b.snapshot().get("chat_requests", 0)
    done = run(*args, home=runs.home)
    assert done.returncode == 0, done.stdout + done.stderr
    # the first repeat is the cached single judgement; the two others ask with their seeds
    asked = runs.judge_b.snapshot().get("chat_requests", 0) - before
    single = re.search(r"judge: (\d+) requests", done.stdout)
    assert single is not None and asked > 0 and asked == int(single.group(1))
    found = re.search(r"mean of 3 repeats; (\d+) result\(s\) disagree", done.stdout)
    assert found is not None and int(found.group(1)) > 0
    assert re.search(r"^  - row \d+ faithfulness \([\d.]+, [\d.]+, [\d.]+\): ", done.stdout, re.M)
    page = summary.read_text(encoding="utf-8")
    assert f"### Results whose repeats disagree ({found.group(1)})" in page
    assert "gate passed" in done.stdout
    # each repeat's replies are cached under its own seed: the same command asks nothing
    again = run(*args, home=runs.home)
    assert again.returncode == 0 and runs.judge_b.snapshot()["chat_requests"] == before + asked
    # repeats need a judge to repeat
    bad = run("eval", str(runs.home / "grounded.jsonl"), "-m", "faithfulness", "--repeats",
              "2", home=runs.home)  # fmt: skip
    assert bad.returncode == 2 and "judge" in bad.stderr


def test_stored_runs_gate_as_their_results_files_do(runs: Runs) -> None:
    """A stored run is read in one query of its scores; the rows a failed rule shows are then
    read whole: the same rows, texts and reasons as from the results files."""
    pages = []
    for candidate, baseline in ((runs.worse_id, runs.base_id), (str(runs.worse), str(runs.base))):
        summary = runs.home / f"stored-{len(pages)}.md"
        done = run(
            "gate", candidate, "--baseline", baseline, "-r", RULE, "-r", "faithfulness.mean >= 0.99",
            "--markdown", str(summary), home=runs.home,
        )  # fmt: skip
        assert done.returncode == 1, done.stdout + done.stderr
        pages.append(summary.read_text(encoding="utf-8"))
    stored, files = (page.split("\n", 1)[1] for page in pages)  # the heading names the sources
    assert stored == files
    assert "It was first described in the year 1850" in stored and "not supported" in stored


def test_a_stored_run_of_repeats_keeps_them_for_a_disagreement_queue(runs: Runs) -> None:
    """``--repeats`` stored: the run keeps the first repeat's score and each row's repeated
    scores, so a review queue's ``disagreement`` rule picks exactly the rows whose repeats
    the command said disagree."""
    done = run(
        "eval", str(runs.home / "grounded.jsonl"), "-m", "faithfulness", "--judge-model",
        "scripted", "--judge-base-url", runs.judge_b.url, "--repeats", "3", home=runs.home,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    stored = re.search(r"run ([0-9a-f]{32}) stored", done.stdout)
    said = {int(i) for i in re.findall(r"^  - row (\d+) faithfulness", done.stdout, re.M)}
    found = re.search(r"mean of 3 repeats; (\d+) result\(s\) disagree", done.stdout)
    assert stored is not None and found is not None and said
    runs_store = RunStore(open_store(f"sqlite:///{runs.home / 'ragmeter.db'}"))
    options = ReviewOptions("disagreement", 1000, ("local",), seed=1)
    queue = make_queue(runs_store, ReviewQueueStore(runs_store.store), stored.group(1),
                       "faithfulness", options, "local")  # fmt: skip
    picked = {item.row_index for item in ReviewQueueStore(runs_store.store).items(queue.id)}
    assert len(picked) == int(found.group(1)) and said <= picked
