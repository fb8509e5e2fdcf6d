"""Scored batches wait for the committer in a bounded handover: when keeping is slower than
scoring (a store under retrieval metrics), the workers wait instead of piling every row's
results up in memory."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ragmeter._sync import run_sync
from ragmeter.runs.execution.executor import execute_plan
from ragmeter.runs.planning.config import EvaluationConfig
from ragmeter.runs.planning.plan import build_plan
from ragmeter.runs.storage.result_table import ScoredBatch

BATCHES = 12


@dataclass
class SlowSink:
    """Keeps rows in memory, a tenth of a second per transaction (a slow store)."""

    given: list[int] = field(default_factory=list)
    rows: int = 0

    def keep(self, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
        time.sleep(0.1)
        self.given.append(len(batches))
        self.rows += sum(len(b.indices) for b in batches)
        return True

    def running(self) -> bool:
        return True


def _plan(concurrency: int) -> Any:
    from ragmeter.runs.execution.executor import BATCH_ROWS

    rows = [
        {"query": f"q{i}", "retrieved_ids": ["a", "b"], "reference_ids": ["a"]}
        for i in range(BATCH_ROWS * BATCHES)
    ]
    config = EvaluationConfig(metrics=("mrr",), concurrency=concurrency)
    return build_plan(config, rows)


def test_a_slow_sink_is_handed_a_bounded_number_of_batches_at_once() -> None:
    plan = _plan(concurrency=2)
    sink = SlowSink()
    run_sync(execute_plan(plan, sink))
    assert sink.rows == len(plan.rows)  # nothing lost
    assert sum(sink.given) == BATCHES
    assert max(sink.given) <= 4  # scored batches waiting at most (two workers: the floor, 4)
    assert len(sink.given) >= BATCHES // 4
