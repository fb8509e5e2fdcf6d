"""Review queues over a run in a real store (SQLite, then PostgreSQL) whose results carry
verdicts and repeated judgements (``details.values.repeat_N``, as ``combine_repeats`` keeps
them): the disagreement, threshold and failures rules pick from the stored rows, and the
items keep their inclusion probabilities."""

from __future__ import annotations

import pytest

from ragmeter.errors import ConfigError
from ragmeter.reports.record import ResultRecord
from ragmeter.runs.review.queues import make_queue
from ragmeter.runs.review.sampling import ReviewOptions
from ragmeter.runs.storage.review_queues import ReviewQueueStore
from ragmeter.runs.storage.store import RunStore
from tests.integration.helpers import stored_run

pytestmark = pytest.mark.usefixtures("store_home")  # each test on SQLite and on PostgreSQL

ROWS = [{"query": f"q{i}", "response": f"a{i}", "retrieved_contexts": [f"c{i}"]} for i in range(10)]


def _record(i: int, repeats: bool) -> ResultRecord:
    score = i / 10
    again = 1 - score if i % 2 else score  # odd rows: the repeats disagree
    details = {"groups": [], "values": {"repeat_1": score, "repeat_2": again}} if repeats else None
    return ResultRecord(i, "faithfulness", score, score >= 0.5, None, None, None, None, 0,
                        f"q{i}", ROWS[i], details=details)  # fmt: skip


def _run(repeats: bool) -> tuple[RunStore, str]:
    records = [_record(i, repeats) for i in range(len(ROWS))]
    runs, run_id = stored_run(ROWS, ["faithfulness"], records)
    return runs, run_id


def _rows(runs: RunStore, run_id: str, rule: str, count: int, **more: object) -> dict[int, float]:
    queues = ReviewQueueStore(runs.store)
    options = ReviewOptions(rule, count, ("ann",), **more)  # type: ignore[arg-type]
    queue = make_queue(runs, queues, run_id, "faithfulness", options, "ann")
    return {item.row_index: item.probability for item in queues.items(queue.id, "ann")}


def test_the_rules_pick_from_a_stored_runs_verdicts_and_repeats(store_url: str) -> None:
    runs, run_id = _run(repeats=True)
    disagree = _rows(runs, run_id, "disagreement", 3, seed=4)
    assert set(disagree) <= {1, 3, 7, 9} and len(disagree) == 3  # row 5: 0.5 and 0.5 agree
    assert set(disagree.values()) == {3 / 4}
    near = _rows(runs, run_id, "threshold", 2)  # the middle of 0.4 (fails) and 0.5 (passes)
    assert set(near) == {4, 5} and set(near.values()) == {1.0}
    failing = _rows(runs, run_id, "failures", 10)
    assert set(failing) == {0, 1, 2, 3, 4} and set(failing.values()) == {1.0}
    assert [q.rule for q in ReviewQueueStore(runs.store).of_run(run_id)] == [
        "disagreement", "threshold", "failures"]  # fmt: skip


def test_a_stored_run_without_repeats_has_no_disagreement(store_url: str) -> None:
    runs, run_id = _run(repeats=False)
    with pytest.raises(ConfigError, match="this run has no repeats"):
        _rows(runs, run_id, "disagreement", 3)
    assert ReviewQueueStore(runs.store).of_run(run_id) == []
