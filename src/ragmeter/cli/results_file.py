"""The ``--out`` results file of ``ragmeter eval`` and ``ragmeter runs results``, in the format
its extension names: JSON Lines and Parquet hold one record per row x metric (every field of
a result), CSV one line per row with a column per metric (what a spreadsheet shows)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.reports.record import json_default

__all__ = ["RESULT_FORMATS", "check_results_path", "write_results"]

#: the extensions ``--out`` accepts and the format each one writes
RESULT_FORMATS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}

#: record fields that hold nested values: JSON text in CSV and Parquet cells
_NESTED = ("prediction", "contexts", "raw_dataset", "cost", "details")

Labelled = Sequence[tuple[str, EvaluationReport]]


def check_results_path(out: Path) -> str:
    """The format ``out``'s extension names; an unknown one is an error naming it and the
    accepted ones (raised before any work is done)."""
    suffix = out.suffix.lower()
    if suffix in RESULT_FORMATS:
        return RESULT_FORMATS[suffix]
    accepted = ", ".join(RESULT_FORMATS)
    named = f"extension '{out.suffix}'" if out.suffix else "no extension"
    hint = " (JSON Lines is .jsonl)" if suffix == ".json" else ""
    raise ConfigError(f"--out {out}: {named} is not a results format; use {accepted}{hint}")


def write_results(out: Path, reports: Labelled, key: str | None = None) -> int:
    """Write the labelled reports to ``out`` in the format of its extension and return the
    number of lines (records or CSV rows) written. ``key`` (e.g. ``retriever``) names the
    label's column; None: no label column."""
    kind = check_results_path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if kind == "csv":
        return _write_csv(out, reports, key)
    if kind == "parquet":
        return _write_parquet(out, reports, key)
    out.unlink(missing_ok=True)
    lines = 0
    for label, report in reports:
        report.to_jsonl(out, extra={key: label} if key is not None else None, append=True)
        lines += len(report)
    return lines


def _cell(value: Any) -> Any:
    """A nested value as JSON text; a plain one as it is."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False, default=json_default)


def _write_parquet(out: Path, reports: Labelled, key: str | None) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = list(ResultRecord.__dataclass_fields__)
    columns: dict[str, list[Any]] = {name: [] for name in ([key] if key else []) + fields}
    for label, report in reports:
        for record in report:
            if key is not None:
                columns[key].append(label)
            for name, value in record.to_dict().items():
                columns[name].append(
                    json.dumps(value, ensure_ascii=False, default=json_default)
                    if name in _NESTED
                    else value
                )
    pq.write_table(pa.table(columns), out)
    return len(columns["row_index"])


def _rows(report: EvaluationReport) -> Iterator[list[ResultRecord]]:
    """The report's records grouped by row (records come row by row)."""
    group: list[ResultRecord] = []
    for record in report:
        if group and record.row_index != group[0].row_index:
            yield group
            group = []
        group.append(record)
    if group:
        yield group


def _csv_header(reports: Labelled, key: str | None) -> tuple[list[str], list[str], list[str]]:
    """Every metric (in first-seen order), those with a pass/fail, and the header."""
    metrics: list[str] = []
    passing: set[str] = set()
    for _, report in reports:
        for name in report.metric_names:
            if name not in metrics:
                metrics.append(name)
        passing.update(r.metric_name for r in report if r.passing is not None)
    with_passing = [m for m in metrics if m in passing]
    header = ([key] if key else []) + ["row_index", "query", *metrics]
    header += [f"{m} passing" for m in with_passing]
    header += [f"{m} reason" for m in metrics] + ["prediction", "contexts", "row"]
    return metrics, with_passing, header


def _write_csv(out: Path, reports: Labelled, key: str | None) -> int:
    metrics, with_passing, header = _csv_header(reports, key)
    lines = 0
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for label, report in reports:
            for group in _rows(report):
                by_metric = {r.metric_name: r for r in group}
                first = group[0]
                line: list[Any] = [label] if key else []
                line += [first.row_index, first.query]
                line += [_score(by_metric.get(m)) for m in metrics]
                line += [_passing(by_metric.get(m)) for m in with_passing]
                line += [_reason(by_metric.get(m)) for m in metrics]
                line += [_cell(first.prediction), _cell(first.contexts), _cell(first.raw_dataset)]
                writer.writerow(["" if value is None else value for value in line])
                lines += 1
    return lines


def _score(record: ResultRecord | None) -> float | None:
    return None if record is None else record.score


def _passing(record: ResultRecord | None) -> str | None:
    if record is None or record.passing is None:
        return None
    return "true" if record.passing else "false"


def _reason(record: ResultRecord | None) -> str | None:
    """Why a score is null, else the judge's feedback."""
    if record is None:
        return None
    return record.error if record.score is None else record.feedback
