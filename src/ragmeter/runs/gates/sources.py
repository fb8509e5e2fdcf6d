"""What a gate reads: a stored run (by id or name) or a results file (the JSONL that
``ragmeter eval --out`` and ``ragmeter runs results`` write), as an ``EvaluationReport``."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, DatasetError, NotFoundError, clip
from ragmeter.metrics.scales import scale_labels
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.runs.storage.labels import LabelStore
from ragmeter.runs.storage.result_store import light_records, row_records
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import open_store

__all__ = ["LABEL_KEYS", "StoredResults", "full_records", "load_results", "read_results_file"]

#: keys ``ragmeter eval --out`` adds to tell several retrievers' or apps' results apart
LABEL_KEYS = ("retriever", "app")


def _looks_like_file(source: str) -> bool:
    return source.endswith((".jsonl", ".json")) or "/" in source or "\\" in source


def load_results(
    source: str | Path | EvaluationReport, *, store: str | None = None
) -> tuple[EvaluationReport, str]:
    """(report, label) of ``source``: a report as given, a results file when the path
    exists (or looks like one), else a stored run of this store (``$RAGMETER_HOME``'s or
    the SQLAlchemy URL ``store``). NotFoundError naming it when it is neither."""
    if isinstance(source, EvaluationReport):
        return source, source.run_id or "results"
    path = Path(source)
    if path.is_file():
        return read_results_file(path), str(path)
    text = str(source)
    if _looks_like_file(text):
        raise NotFoundError(f"no results file '{clip(text, 200)}'")
    runs = RunStore(open_store(store))
    try:
        record = runs.find(text)
    except NotFoundError:
        raise NotFoundError(
            f"'{clip(text)}' is neither a results file nor a stored run of this store "
            "(see 'ragmeter runs list')"
        ) from None
    if record.state != "done":
        raise ConfigError(
            f"run {record.id} is {record.state} ({record.done_rows}/{record.total_rows} rows): "
            f"gate a finished run (finish it with 'ragmeter runs resume {record.id}')"
        )
    return StoredResults.read(runs, record.id), record.id


class StoredResults(EvaluationReport):
    """A stored run's results as the gate reads them: scores, verdicts, queries, row ids and
    null reasons of every result, in one query; ``full`` reads the rest (response, feedback,
    reasoning) of the few rows a gate shows."""

    runs: RunStore

    @classmethod
    def read(cls, runs: RunStore, run_id: str) -> StoredResults:
        record = runs.get(run_id)
        with runs.store.session() as session:
            records = light_records(session, run_id, record.dataset_id)
        names = list(record.spec.get("metric_names") or record.spec.get("metrics", []))
        names = list(dict.fromkeys([*names, *(r.metric_name for r in records)]))
        report = cls(records, names, record.done_rows, 0.0, dict(record.usage or {}))
        report.run_id = run_id
        report.runs = runs
        report.human_labels = LabelStore(runs.store).human(record)
        return report

    def full(self, records: Sequence[ResultRecord]) -> list[ResultRecord]:
        """``records`` (of this run) read whole, in the order given."""
        if not records:
            return []
        wanted = {(r.metric_name, r.row_index) for r in records}
        run_id = str(self.run_id)
        rows = {r.row_index for r in records}
        metrics = {r.metric_name for r in records}
        with self.runs.store.session() as session:
            read = row_records(session, run_id, self.runs.get(run_id).dataset_id, rows, metrics)
            found = {
                (row.metric_name, row.row_index): row
                for row in read
                if (row.metric_name, row.row_index) in wanted
            }
        return [found.get((r.metric_name, r.row_index), r) for r in records]


def _number(value: Any, path: Path, line: int, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DatasetError(
            f"must be a finite number or null, got {clip(repr(value))}",
            source=str(path),
            line=line,
            field=field,
        )
    return float(value)


def _record(item: Any, path: Path, line: int) -> ResultRecord:
    if not isinstance(item, dict):
        raise DatasetError("is not a JSON object (a result line)", source=str(path), line=line)
    for field in ("metric_name", "row_index"):
        if field not in item:
            raise DatasetError(
                "lacks it: is this a results file (ragmeter eval --out)?",
                source=str(path),
                line=line,
                field=field,
            )
    if isinstance(item["row_index"], bool) or not isinstance(item["row_index"], int):
        raise DatasetError("must be an integer", source=str(path), line=line, field="row_index")
    found = item.get("raw_dataset")
    raw: dict[str, Any] = found if isinstance(found, dict) else {}
    passing = item.get("passing")
    return ResultRecord(
        row_index=item["row_index"],
        metric_name=str(item["metric_name"]),
        score=_number(item.get("score"), path, line, "score"),
        passing=passing if isinstance(passing, bool) else None,
        feedback=item.get("feedback"),
        error=item.get("error"),
        prediction=item.get("prediction"),
        contexts=item.get("contexts"),
        prediction_cost=int(item.get("prediction_cost") or 0),
        query=str(item.get("query") or raw.get("query") or ""),
        raw_dataset=raw,
        cost=item.get("cost"),
        error_kind=item.get("error_kind"),
        details=item.get("details") if isinstance(item.get("details"), dict) else None,
    )


def read_results_file(path: Path) -> EvaluationReport:
    """The results of one evaluation from a JSONL file, one result per line; DatasetError
    naming the file and line of a bad one, ConfigError when it holds several retrievers' or
    apps' results (gate one at a time) or none."""
    records: list[ResultRecord] = []
    labels: dict[str, set[str]] = {key: set() for key in LABEL_KEYS}
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read results file {path}: {exc.strerror or exc}") from None
    with handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                item = json.loads(text)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise DatasetError(f"is not JSON: {exc}", source=str(path), line=line) from None
            records.append(_record(item, path, line))
            for key in LABEL_KEYS:
                if isinstance(item.get(key), str):
                    labels[key].add(item[key])
    if not records:
        raise ConfigError(f"results file {path} holds no result")
    for key, seen in labels.items():
        if len(seen) > 1:
            raise ConfigError(
                f"results file {path} holds the results of several {key}s "
                f"({', '.join(sorted(seen))}): gate one at a time (keep the lines of one)"
            )
    names = list(dict.fromkeys(r.metric_name for r in records))
    rows = len({r.row_index for r in records})
    report = EvaluationReport(records, names, rows, 0.0)
    report.scales = scale_labels(names)
    return report


def full_records(report: EvaluationReport, records: Sequence[ResultRecord]) -> list[ResultRecord]:
    """``records`` of ``report`` with all their fields: read from the store for a stored
    run's results, as they are otherwise."""
    if isinstance(report, StoredResults):
        return report.full(records)
    return list(records)
