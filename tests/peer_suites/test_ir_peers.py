"""Every case of the IR peers' own tests (ir_measures, ranx, pytrec_eval; conversions in
``_ir_cases``) through three paths: ``ragmeter.evaluate`` from a list of dicts, the batch API
``ragmeter.metrics.score_rankings``, and ``ragmeter eval FILE.jsonl`` in a subprocess (one per
peer's file, all its cases' rows and metrics at once). RAGAS's id-based precision and recall
(the other cases over ids, run by ``test_agent_peers`` through the other paths) run here
through the batch API.

The peers score a query with no relevant document 0 (trec_eval's convention, which pytrec_eval
and ir_measures keep, and ranx's), so the cases run with ``no_relevant="zero"``; ragmeter's
default is a null score. Each value (per query, and the mean or, for ir_measures' counts, the
sum) is the peer's, or for a value listed in docs/peer-differences.md ragmeter's value as
documented there; a failure names the case, the path and the query. Without the peers' cases
beside the checkout the tests skip, which CI turns into a failure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

import ragmeter
from ragmeter.errors import RagmeterError
from ragmeter.metrics import score_rankings
from tests.integration.helpers import json_lines, run
from tests.peer_suites._cases import MISSING, PeerCase, agent_cases, case_params, given
from tests.peer_suites._differences import read_differences
from tests.peer_suites._ir_cases import (
    IR_FILES,
    NO_RELEVANT,
    CliBatch,
    IrCase,
    as_scores,
    cli_batch,
    combine,
    ir_cases,
)

CASES = ir_cases()
ID_CASES = [case for case in agent_cases() if "retrieved_context_ids" in case.row]
DIFFERENCES = read_differences()
PARAMS = case_params(CASES, lambda case: case.key)
ID_PARAMS = case_params(ID_CASES, lambda case: case.id)


def test_every_file_was_read() -> None:
    if not CASES:
        pytest.skip(MISSING)
    counts = {name: sum(case.source == name for case in CASES) for name in IR_FILES}
    assert counts == IR_FILES, "the peers' files changed: check the cases read"
    assert len({case.key for case in CASES}) == len(CASES)
    checks = [check for case in CASES for check in case.check_ids]
    assert len(set(checks)) == len(checks)
    assert all(case.checks for case in CASES)
    assert len(ID_CASES) == 2


def test_listed_differences_name_real_values() -> None:
    """A row of the table that names a case of these files names one of its values."""
    if not CASES:
        pytest.skip(MISSING)
    checks = {check for case in CASES for check in case.check_ids}
    ids = {case.id for case in CASES}
    ours = [k for k in DIFFERENCES if any(k == i or k.startswith((f"{i} ", f"{i},")) for i in ids)]
    stale = [k for k in ours if k not in checks]
    assert not stale, f"docs/peer-differences.md lists values that no case has: {stale}"


def _refused(case: IrCase, path: str, error: object) -> NoReturn:
    pytest.fail(f"{case.key} ({path}): ragmeter refuses the case (metric {case.metric!r}): {error}")


@pytest.mark.parametrize("case", PARAMS)
def test_python_api(case: IrCase | None) -> None:
    case = given(case)
    try:
        report = ragmeter.evaluate(list(case.rows), [case.metric], no_relevant=NO_RELEVANT)
    except RagmeterError as exc:
        _refused(case, "Python API", exc)
    (name,) = report.metric_names
    scores = report.scores(name)
    if case.aggregate == "mean":  # the report's own mean
        total = report.summary(resamples=1)[name]["mean"]
    else:
        total = combine(scores, case.aggregate)
    case.check(scores, total, DIFFERENCES, "Python API")


@pytest.mark.parametrize("case", PARAMS)
def test_batch_api(case: IrCase | None) -> None:
    case = given(case)
    retrieved = [row["retrieved_ids"] for row in case.rows]
    relevant = [row["reference_relevance"] for row in case.rows]
    try:
        found = score_rankings(retrieved, relevant, [case.metric], no_relevant=NO_RELEVANT)
    except RagmeterError as exc:
        _refused(case, "batch API", exc)
    (values,) = found.values()  # one metric, under its canonical name
    scores = as_scores(values)
    case.check(scores, combine(scores, case.aggregate), DIFFERENCES, "batch API")


@dataclass(frozen=True)
class Outcome:
    """One ``ragmeter eval`` of a file's batch: its exit code and messages, and the scores
    by (row, result name) it wrote (None: no results file)."""

    returncode: int
    output: str
    scores: dict[tuple[int, str], float | None] | None


def _run_batch(batch: CliBatch, folder: Path) -> Outcome:
    rows, out = folder / "rows.jsonl", folder / "results.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in batch.rows), encoding="utf-8")
    done = run(
        "eval", str(rows), "-m", ",".join(batch.specs), "--out", str(out), "--no-store",
        "--no-relevant", NO_RELEVANT, home=folder / "home",
    )  # fmt: skip
    output = (done.stderr.strip() or done.stdout.strip())[-2000:]
    if not out.exists():
        return Outcome(done.returncode, output, None)
    results = json_lines(out.read_text(encoding="utf-8"))
    scores = {(line["row_index"], line["metric_name"]): line["score"] for line in results}
    return Outcome(done.returncode, output, scores)


class CommandLine:
    """``ragmeter eval`` over each peer's file, run once (when a case of the file first
    asks), in a folder of its own."""

    def __init__(self, folders: pytest.TempPathFactory) -> None:
        self.folders = folders
        self.batches = {n: cli_batch([c for c in CASES if c.source == n]) for n in IR_FILES}
        self.done: dict[str, Outcome] = {}

    def outcome(self, source: str) -> Outcome:
        if source not in self.done:
            folder = self.folders.mktemp(Path(source).stem)
            self.done[source] = _run_batch(self.batches[source], folder)
        return self.done[source]

    def scores(self, case: IrCase) -> list[float | None]:
        batch = self.batches[case.source]
        if case.metric in batch.refused:
            _refused(case, "command line", batch.refused[case.metric])
        found = self.outcome(case.source)
        if found.scores is None:
            pytest.fail(
                f"{case.key} (command line): ragmeter eval wrote no results "
                f"(exit {found.returncode}): {found.output}"
            )
        first, name = batch.first[case.key], batch.names[case.metric]
        return [found.scores.get((first + i, name)) for i in range(len(case.rows))]


@pytest.fixture(scope="module")
def command_line(tmp_path_factory: pytest.TempPathFactory) -> CommandLine:
    return CommandLine(tmp_path_factory)


@pytest.mark.parametrize("source", list(IR_FILES))
def test_command_line_runs(source: str, command_line: CommandLine) -> None:
    """Each file's rows and metrics in one ``ragmeter eval``: it exits 0 (every metric has a
    score)."""
    if not CASES:
        pytest.skip(MISSING)
    found = command_line.outcome(source)
    assert found.returncode == 0, f"{source}: ragmeter eval exit {found.returncode}: {found.output}"


@pytest.mark.parametrize("case", PARAMS)
def test_command_line(case: IrCase | None, command_line: CommandLine) -> None:
    case = given(case)
    scores = command_line.scores(case)
    case.check(scores, combine(scores, case.aggregate), DIFFERENCES, "command line")


@pytest.mark.parametrize("case", ID_PARAMS)
def test_ragas_id_cases_batch_api(case: PeerCase | None) -> None:
    """RAGAS's ID-based context precision and recall: one row of ids, as its sample gives."""
    case = given(case)
    retrieved, reference = case.row["retrieved_context_ids"], case.row["reference_context_ids"]
    (values,) = score_rankings([retrieved], [reference], [case.metric]).values()
    (score,) = as_scores(values)
    case.check(score, DIFFERENCES.get(case.id), "batch API")
