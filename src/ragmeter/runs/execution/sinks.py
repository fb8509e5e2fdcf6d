"""Where an evaluation's finished rows go: a stored run (``StoreSink``: committed as they
finish, within the run's byte budget) or memory (``MemorySink``: the report is made from the
metrics' result columns, records only when asked for)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragmeter.errors import LimitError
from ragmeter.metrics import EvaluationMetric
from ragmeter.metrics.scales import metric_scales
from ragmeter.reports import EvaluationReport
from ragmeter.runs.storage.result_table import (
    ResultGroup,
    ScoredBatch,
    merged_columns,
    result_table,
)
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.bulk import collector_paused

__all__ = ["Budget", "MemorySink", "Opening", "ScoredBatch", "Sink", "StoreSink"]


class Sink(Protocol):
    """Where finished rows go. Both calls run in a worker thread, never on the event loop."""

    def keep(self, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
        """Keep the batches' rows; whether the run is still running after it. A
        ``LimitError`` once a row would pass the sink's budget (the rows before it kept)."""
        ...

    def running(self) -> bool:
        """Whether the run is still running (not stopped by another process)."""
        ...


class Budget:
    """Bytes one execution of a run may store (``max_run_mb``, None: no limit). A row is
    stored only if it fits whole, so no row, however wide, takes the store past it."""

    def __init__(self, max_bytes: int | None) -> None:
        self.max_bytes = max_bytes
        self.left = max_bytes
        self.too_wide: int | None = None  # a row that alone passes the whole budget

    def fitting(self, sizes: Sequence[int], indices: Sequence[int]) -> int:
        """How many of the leading rows (``indices`` in the run, ``sizes`` bytes each: not
        measured without a limit) fit; they are taken from what is left."""
        if self.left is None:
            return len(indices)
        for count, size in enumerate(sizes):
            if size > self.left:
                if self.max_bytes is not None and size > self.max_bytes:
                    self.too_wide = indices[count]
                return count
            self.left -= size
        return len(sizes)

    def exceeded(self) -> LimitError:
        megabytes = (self.max_bytes or 0) / 1_000_000
        if self.too_wide is not None:
            return LimitError(
                f"row {self.too_wide} alone would store more than {megabytes:g} MB of results "
                "(its texts are kept once per metric); shorten it or ask for fewer metrics",
                setting="[server] max_run_mb",
            )
        return LimitError(
            f"the run would store more than {megabytes:g} MB of results; fewer rows or metrics "
            "per run, or resume it to go on",
            setting="[server] max_run_mb",
        )


class Opening:
    """Whether a new run is in the store yet (its dataset stored, its record made and
    started): its rows are scored meanwhile, and a sink keeps them once it is. Set once, by
    the task making the run: opened, or not (it failed, or was stopped)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._opened = False

    def open(self) -> None:
        self._opened = True
        self._done.set()

    def fail(self) -> None:
        self._done.set()

    def pending(self) -> bool:
        """Whether the run is still being made."""
        return not self._done.is_set()

    def wait(self) -> bool:
        """Block until the run is made or failed; whether it is made."""
        self._done.wait()
        return self._opened


@dataclass
class StoreSink:
    """Rows committed to a stored run as they finish, within ``budget``, in one transaction
    per call: each metric's result columns become a record of its plain results and tuples
    of the results table for the rest, with no record per result. ``also`` keeps the
    batches committed (a report made from them). With ``opening``, the run is still being
    made: rows are made ready to store meanwhile, and committed once it is made (none, and
    not running, when it failed)."""

    runs: RunStore
    run_id: str
    metrics: Sequence[EvaluationMetric[Any, Any]]
    budget: Budget = field(default_factory=lambda: Budget(None))
    also: MemorySink | None = None
    opening: Opening | None = None

    def keep(self, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
        with collector_paused():  # tuples by the hundred thousand, in no cycle
            return self._keep(batches, usage)

    def _keep(self, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
        names = [m.metric_name for m in self.metrics]
        groups: list[ResultGroup] = []
        plain: list[tuple[Any, ...]] = []
        rows = 0
        kept: list[ScoredBatch] = []
        fitted = True
        for batch in batches:
            measure = self.budget.left is not None
            table = result_table(self.run_id, batch, names, measure=measure)
            count = self.budget.fitting(table.sizes, batch.indices)
            part = table.head(count)
            groups.extend(part.groups)
            plain.extend(part.batches)
            rows += count
            if count < len(batch.indices):
                fitted = False
                break
            kept.append(batch)
        if self.opening is not None and not self.opening.wait():
            return False
        state = self.runs.commit_results(self.run_id, groups, rows, usage, batches=plain)
        running = state == "running"
        if self.also is not None:
            self.also.keep(kept, usage)
        if not fitted:
            raise self.budget.exceeded()
        return running

    def running(self) -> bool:
        if self.opening is not None and self.opening.pending():
            return True
        if self.opening is not None and not self.opening.wait():
            return False
        return self.runs.state(self.run_id) == "running"


@dataclass
class MemorySink:
    """Rows kept in memory only (an evaluation that stores nothing)."""

    batches: list[ScoredBatch] = field(default_factory=list)
    usage: dict[str, float] = field(default_factory=dict)

    def keep(self, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
        self.batches.extend(batches)
        self.usage = usage
        return True

    def running(self) -> bool:
        return True

    def held(self) -> int:
        """How many rows it holds."""
        return sum(len(b.indices) for b in self.batches)

    def report(
        self,
        rows: Any,
        metrics: Sequence[EvaluationMetric[Any, Any]],
        seconds: float,
        target: str | None,
    ) -> EvaluationReport:
        """The report: straight from the columns when one batch holds every row (metrics
        that ask no judge) or the batches are of the rows themselves (no target), else
        from the batches' records in row order."""
        if len(self.batches) == 1 and len(self.batches[0].indices) == len(rows):
            only = self.batches[0]
            report = EvaluationReport.from_columns(
                only.rows, only.columns, seconds, self.usage, target=target
            )
        elif self.held() == len(rows) and all(b.stored for b in self.batches):
            columns = merged_columns(self.batches, len(rows))
            report = EvaluationReport.from_columns(
                rows, columns, seconds, self.usage, target=target
            )
        else:
            ordered = sorted(self.batches, key=lambda b: b.indices[0] if b.indices else 0)
            records = [r for b in ordered for row in b.records_by_row(metrics) for r in row]
            names = [m.metric_name for m in metrics]
            report = EvaluationReport(records, names, len(rows), seconds, self.usage, target=target)
        report.scales = metric_scales(metrics)
        return report
