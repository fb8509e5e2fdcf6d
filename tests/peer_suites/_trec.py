"""trec_eval's own test cases (its Makefile's ``quicktest`` for the qrels format), read from
``shared/peer_suites``, and the comparison of our output with its expected files, line by
line: same measures and queries in the same order, same text, except a difference
``docs/peer-differences.md`` lists (case id ``FILE::MEASURE::QID``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.peer_suites._cases import peer_suites
from tests.peer_suites._differences import read_differences

__all__ = ["CASES", "TrecCase", "differences", "trec_eval_file"]


def trec_eval_file(name: str) -> Path:
    """One file of trec_eval's test folder (``qrels.test``, ``out.test.aq``, ...); without
    the peers' cases beside the checkout the test skips, which CI turns into a failure."""
    folder = peer_suites()
    if folder is None or not (folder / "trec_eval").is_dir():
        pytest.skip("shared/peer_suites/trec_eval not found in the checkout's folder or above it")
    return folder / "trec_eval" / name


@dataclass(frozen=True)
class TrecCase:
    """One line of trec_eval's quicktest: its files, its measures and options as
    ``ragmeter eval`` spells them, and whether it prints per query (``-q``)."""

    expected: str
    qrels: str
    run: str
    measures: tuple[str, ...] = ()
    relevance_level: int | None = None
    depth: int | None = None
    complete: bool = False
    per_query: bool = True

    def cli_args(self) -> list[str]:
        args = ["--qrels", str(trec_eval_file(self.qrels)), "--run", str(trec_eval_file(self.run))]
        for measure in self.measures:
            args += ["-m", measure]
        if self.relevance_level is not None:
            args += ["--relevance-level", str(self.relevance_level)]
        if self.depth is not None:
            args += ["--depth", str(self.depth)]
        if self.complete:
            args.append("--complete")
        return [*args, "--format", "trec" if self.per_query else "trec-summary"]


#: trec_eval's -m list for out.test.meas_params (its Makefile)
_MEAS_PARAMS = (
    "iprec_at_recall..10,.20,.25,.75,.50",
    "P.5,7,3",
    "recall.20,2000",
    "Rprec_mult.5.0,0.2,0.35",
    "utility.2,-1,0,0",
    "11pt_avg..25,.5,.75",
    "ndcg.1=3,2=9,4=4.5",
    "ndcg_cut.10,20,23.4",
    "success.2,5,20",
)

CASES = (
    TrecCase("out.test", "qrels.test", "results.test", per_query=False),
    TrecCase("out.test.aq", "qrels.test", "results.test", ("all_trec",)),
    TrecCase("out.test.aqc", "qrels.test", "results.trunc", ("all_trec",), complete=True),
    TrecCase(
        "out.test.aqcM", "qrels.test", "results.trunc", ("all_trec",), depth=100, complete=True
    ),
    TrecCase(
        "out.test.aql",
        "qrels.rel_level",
        "results.test",
        ("all_trec", "relstring.20"),
        relevance_level=2,
    ),
    TrecCase("out.test.meas_params", "qrels.test", "results.test", _MEAS_PARAMS),
    TrecCase(
        "out.comment.test", "qrels.comment.test.gz", "results.comment.test.gz", per_query=False
    ),
)


def _lines(text: str) -> list[tuple[str, str, str, str]]:
    """(measure, query, value, the line) of each line of trec_eval's output."""
    found = []
    for line in text.splitlines():
        name, qid, value = line.split("\t")
        found.append((name.strip(), qid, value, line))
    return found


def differences(case: TrecCase, ours: str) -> list[str]:
    """Every way ``ours`` differs from trec_eval's expected file for ``case``, naming the
    file, measure and query; empty when they agree."""
    expected = _lines(trec_eval_file(case.expected).read_text())
    mine = _lines(ours)
    keys = [(name, qid) for name, qid, _, _ in expected]
    my_keys = [(name, qid) for name, qid, _, _ in mine]
    problems = [
        f"{case.expected}::{name}::{qid}: trec_eval prints it, ragmeter does not"
        for name, qid in keys
        if (name, qid) not in set(my_keys)
    ]
    problems += [
        f"{case.expected}::{name}::{qid}: ragmeter prints it, trec_eval does not"
        for name, qid in my_keys
        if (name, qid) not in set(keys)
    ]
    if not problems and keys != my_keys:
        at = next(i for i, (a, b) in enumerate(zip(keys, my_keys, strict=True)) if a != b)
        problems.append(f"{case.expected}: line {at + 1} is {my_keys[at]}, trec_eval's {keys[at]}")
    listed = read_differences()
    theirs = {(name, qid): (value, line) for name, qid, value, line in expected}
    for name, qid, value, line in mine:
        if (name, qid) not in theirs or theirs[(name, qid)][1] == line:
            continue
        case_id = f"{case.expected}::{name}::{qid}"
        peer = theirs[(name, qid)][0]
        known = listed.get(case_id)
        if known is not None and known.peer == peer and _same(known.ours, value):
            continue
        problems.append(f"{case_id}: trec_eval {peer!r}, ragmeter {value!r} ({line!r})")
    return problems


def _same(documented: float | None, printed: str) -> bool:
    """Whether a value docs/peer-differences.md lists as ours is the one printed."""
    try:
        return documented is not None and math.isclose(documented, float(printed))
    except ValueError:
        return False
