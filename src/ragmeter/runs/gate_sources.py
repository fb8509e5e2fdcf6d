"""What a gate reads: a stored run (by id or name) or a results file (the JSONL that
``ragmeter eval --out`` and ``ragmeter runs results`` write), as an ``EvaluationReport``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, DatasetError, NotFoundError, clip
from ragmeter.reports import EvaluationReport, ResultRecord

__all__ = ["LABEL_KEYS", "load_results", "read_results_file"]

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
    from ragmeter.runs.store import RunStore
    from ragmeter.store import open_store

    runs = RunStore(open_store(store))
    try:
        record = runs.get(text)
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
    report = runs.report(record.id)
    report.run_id = record.id
    return report, record.id


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
    return EvaluationReport(records, names, rows, 0.0)
