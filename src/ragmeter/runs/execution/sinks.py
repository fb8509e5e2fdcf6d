"""Where an evaluation's finished rows go: a stored run (``StoreSink``: committed as they
finish, within the run's byte budget) or memory (``MemorySink``: the report is made from the
metrics' result columns, records only when asked for)."""

from __future__ import annotations

import asyncio
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

__all__ = ["Budget", "MemorySink", "Ready", "RunMaking", "ScoredBatch", "Sink", "StoreSink"]


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


class RunMaking:
    """A new run being made (its dataset stored, its record written and started) while its
    rows are scored: a store sink makes their results ready meanwhile, and the executor
    awaits ``wait`` on the event loop (no thread waits) before the sink commits them. Made
    and settled on the event loop; ``made`` is None until then, then whether the run was
    made (False: it failed or was stopped, and nothing is committed). Worker threads read
    ``made`` (``StoreSink.commit``, ``running``): one attribute, set once."""

    def __init__(self) -> None:
        self._settled = asyncio.Event()
        self.made: bool | None = None

    def settle(self, made: bool) -> None:
        if self.made is None:
            self.made = made
            self._settled.set()

    async def wait(self) -> None:
        """Until the run is made or failed (``made`` says which)."""
        await self._settled.wait()


@dataclass(frozen=True)
class Ready:
    """Finished rows as the store takes them (``StoreSink.prepare``): rows of the results
    table by metric, records of plain results, how many rows they are, the batches they
    come from, and whether every row fitted the budget."""

    groups: list[ResultGroup]
    plain: list[tuple[Any, ...]]
    rows: int
    kept: list[ScoredBatch]
    fitted: bool


@dataclass
class StoreSink:
    """Rows committed to a stored run as they finish, within ``budget``, in one transaction
    per call: each metric's result columns become a record of its plain results and tuples
    of the results table for the rest, with no record per result. ``also`` keeps the
    batches committed (a report made from them). With ``making``, the run is still being
    made: the executor prepares rows meanwhile and commits them once it is made and started
    (none, and not running, when it was not)."""

    runs: RunStore
    run_id: str
    metrics: Sequence[EvaluationMetric[Any, Any]]
    budget: Budget = field(default_factory=lambda: Budget(None))
    also: MemorySink | None = None
    making: RunMaking | None = None

    def keep(self, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
        return self.commit(self.prepare(batches), usage)

    def prepare(self, batches: list[ScoredBatch]) -> Ready:
        """The batches' results as the store takes them, the rows that fit the budget."""
        with collector_paused():  # tuples by the hundred thousand, in no cycle
            names = [m.metric_name for m in self.metrics]
            groups: list[ResultGroup] = []
            plain: list[tuple[Any, ...]] = []
            rows = 0
            kept: list[ScoredBatch] = []
            for batch in batches:
                measure = self.budget.left is not None
                table = result_table(self.run_id, batch, names, measure=measure)
                count = self.budget.fitting(table.sizes, batch.indices)
                part = table.head(count)
                groups.extend(part.groups)
                plain.extend(part.batches)
                rows += count
                if count < len(batch.indices):
                    return Ready(groups, plain, rows, kept, False)
                kept.append(batch)
            return Ready(groups, plain, rows, kept, True)

    def commit(self, ready: Ready, usage: dict[str, float]) -> bool:
        """Commit what ``prepare`` made (one transaction); whether the run still runs. A
        ``LimitError`` after it when a row did not fit the budget."""
        if self.making is not None and not self.making.made:
            return False  # the run was not made: nothing to keep them in
        with collector_paused():
            state = self.runs.commit_results(
                self.run_id, ready.groups, ready.rows, usage, batches=ready.plain
            )
        if self.also is not None:
            self.also.keep(ready.kept, usage)
        if not ready.fitted:
            raise self.budget.exceeded()
        return state == "running"

    def running(self) -> bool:
        if self.making is not None and self.making.made is None:
            return True  # still being made
        if self.making is not None and not self.making.made:
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
