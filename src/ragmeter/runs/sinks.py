"""Where an evaluation's finished rows go: a stored run (``StoreSink``: committed as they
finish, within the run's byte budget) or memory (``MemorySink``: the report is made from the
metrics' result columns, records only when asked for)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragmeter.errors import LimitError
from ragmeter.metrics import EvaluationMetric
from ragmeter.metrics.scales import metric_scales
from ragmeter.reports import EvaluationReport, ResultColumns, ResultRecord
from ragmeter.reports.report import json_default
from ragmeter.runs.scoring import build_records
from ragmeter.runs.store import RunStore

__all__ = ["Budget", "MemorySink", "ScoredBatch", "Sink", "StoreSink"]


@dataclass
class ScoredBatch:
    """Rows ``indices`` of a plan (``rows``, as prepared) with each metric's result columns."""

    indices: list[int]
    rows: Any
    columns: list[ResultColumns]

    def records_by_row(
        self, metrics: Sequence[EvaluationMetric[Any, Any]]
    ) -> list[list[ResultRecord]]:
        """The batch's records grouped per row (each row's metrics in order)."""
        records = build_records(self.rows, metrics, self.columns, indices=self.indices)
        width = len(metrics)
        return [records[i : i + width] for i in range(0, len(records), width)]


class Sink(Protocol):
    """Where finished rows go. Both calls run in a worker thread, never on the event loop."""

    def keep(self, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
        """Keep the batches' rows; whether the run is still running after it. A
        ``LimitError`` once a row would pass the sink's budget (the rows before it kept)."""
        ...

    def running(self) -> bool:
        """Whether the run is still running (not stopped by another process)."""
        ...


def _stored_bytes(records: list[ResultRecord]) -> int:
    """About what ``records`` take in the store: their predictions, contexts, details and
    rows (a row shared by several results is measured once and counted for each)."""
    sizes: dict[int, int] = {}
    total = 0
    for r in records:
        key = id(r.raw_dataset)
        if key not in sizes:
            sizes[key] = len(json.dumps(r.raw_dataset, default=json_default))
        texts = [r.prediction, r.contexts, r.details]
        total += sizes[key] + len(json.dumps(texts, default=json_default))
    return total


class Budget:
    """Bytes one execution of a run may store (``max_run_mb``, None: no limit). A row is
    stored only if it fits whole, so no row, however wide, takes the store past it."""

    def __init__(self, max_bytes: int | None) -> None:
        self.max_bytes = max_bytes
        self.left = max_bytes
        self.too_wide: int | None = None  # a row that alone passes the whole budget

    def take(self, rows: list[list[ResultRecord]]) -> tuple[list[ResultRecord], bool]:
        """The records of the leading rows that fit, and whether every row fitted."""
        kept: list[ResultRecord] = []
        for row in rows:
            if self.left is not None:
                size = _stored_bytes(row)
                if size > self.left:
                    if self.max_bytes is not None and size > self.max_bytes and row:
                        self.too_wide = row[0].row_index
                    return kept, False
                self.left -= size
            kept.extend(row)
        return kept, True

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


@dataclass
class StoreSink:
    """Rows committed to a stored run as they finish, within ``budget``."""

    runs: RunStore
    run_id: str
    metrics: Sequence[EvaluationMetric[Any, Any]]
    budget: Budget = field(default_factory=lambda: Budget(None))

    def keep(self, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
        rows = [row for batch in batches for row in batch.records_by_row(self.metrics)]
        records, fitted = self.budget.take(rows)
        running = self.runs.commit_rows(self.run_id, records, usage) == "running"
        if not fitted:
            raise self.budget.exceeded()
        return running

    def running(self) -> bool:
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

    def report(
        self,
        rows: Any,
        metrics: Sequence[EvaluationMetric[Any, Any]],
        seconds: float,
        target: str | None,
    ) -> EvaluationReport:
        """The report: straight from the columns when one batch holds every row (metrics
        that ask no judge), else from the batches' records in row order."""
        if len(self.batches) == 1 and len(self.batches[0].indices) == len(rows):
            only = self.batches[0]
            report = EvaluationReport.from_columns(
                only.rows, only.columns, seconds, self.usage, target=target
            )
        else:
            ordered = sorted(self.batches, key=lambda b: b.indices[0] if b.indices else 0)
            records = [r for b in ordered for row in b.records_by_row(metrics) for r in row]
            names = [m.metric_name for m in metrics]
            report = EvaluationReport(records, names, len(rows), seconds, self.usage, target=target)
        report.scales = metric_scales(metrics)
        return report
