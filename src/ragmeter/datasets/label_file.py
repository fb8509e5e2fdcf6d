"""Label files: one human label a line, as JSONL or CSV (by the file's extension). Each line
names its row by ``row_id`` (the row's own ``id``), ``query`` or ``row_index`` and gives
``metric``, ``reviewer``, ``value`` and optionally ``comment`` (``wire.labels.LabelIn``);
an export's ``created_at`` is read over. A bad line is a DatasetError naming the file, the
line and the field."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import orjson
from pydantic import ValidationError

from ragmeter.errors import DatasetError
from ragmeter.wire.labels import LabelFormat, LabelIn

__all__ = ["EXPORT_COLUMNS", "LabelLine", "label_format", "read_labels", "write_labels"]

#: the columns of an exported label, in order (``row_id`` or else ``query`` names the row)
EXPORT_COLUMNS = (
    "row_id",
    "query",
    "row_index",
    "metric",
    "reviewer",
    "value",
    "comment",
    "created_at",
)
#: fields an export writes that an import reads over
_READ_OVER = frozenset({"created_at", "updated_at", "run_id"})
_SUFFIXES: dict[str, LabelFormat] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


@dataclass(frozen=True)
class LabelLine:
    """A label read from ``line`` of a file (1-based)."""

    line: int
    label: LabelIn


def label_format(path: Path | str) -> LabelFormat:
    """``jsonl`` or ``csv`` by the file's extension; DatasetError for any other."""
    suffix = Path(path).suffix.lower()
    found = _SUFFIXES.get(suffix)
    if found is None:
        raise DatasetError(
            f"unknown label file type '{suffix or '(none)'}': use .jsonl or .csv",
            source=str(path),
        )
    return found


def read_labels(
    path: Path, *, name: str | None = None, max_lines: int | None = None
) -> list[LabelLine]:
    """Every label of a JSONL or CSV file (blank lines skipped, a UTF-8 BOM allowed); errors
    name ``name`` (default: the path) and the line. More than ``max_lines`` labels: an
    error."""
    source = name or str(path)
    kind = label_format(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not UTF-8 text ({exc.reason})", source=source) from None
    except OSError as exc:
        raise DatasetError(f"cannot read it: {exc.strerror or exc}", source=source) from None
    entries = _jsonl_entries(text, source) if kind == "jsonl" else _csv_entries(text, source)
    out: list[LabelLine] = []
    for line, raw in entries:
        if max_lines is not None and len(out) >= max_lines:
            raise DatasetError(f"holds more than {max_lines} labels", source=source)
        out.append(LabelLine(line, _label(raw, source, line)))
    if not out:
        raise DatasetError("holds no labels", source=source)
    return out


def _label(raw: Mapping[str, Any], source: str, line: int) -> LabelIn:
    fields = {k: v for k, v in raw.items() if k not in _READ_OVER}
    try:
        return LabelIn.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = (
                "is not a label field (row_id, query, row_index, metric, reviewer, value, comment)"
            )
        raise DatasetError(message, source=source, line=line, field=field) from None


def _jsonl_entries(text: str, source: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(f"not JSON ({exc})", source=source, line=number) from None
        if not isinstance(value, dict):
            raise DatasetError("a label line is a JSON object", source=source, line=number)
        yield number, value


def _csv_entries(text: str, source: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey="\x00extra")
    if not reader.fieldnames:
        return
    try:
        for raw in reader:
            number = reader.line_num  # the line the record ends on
            if "\x00extra" in raw:
                raise DatasetError("has more cells than the header", source=source, line=number)
            cells = {k: v for k, v in raw.items() if v not in (None, "")}
            if cells:
                yield number, cells
    except csv.Error as exc:
        raise DatasetError(f"bad CSV ({exc})", source=source, line=reader.line_num) from None


def write_labels(out: TextIO, labels: Iterable[Mapping[str, Any]], kind: LabelFormat) -> int:
    """Write ``labels`` (dicts with ``EXPORT_COLUMNS``) as JSONL (absent ones left out) or
    CSV (with a header; absent: an empty cell); how many."""
    count = 0
    if kind == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(EXPORT_COLUMNS)
        for label in labels:
            writer.writerow(["" if label.get(c) is None else label[c] for c in EXPORT_COLUMNS])
            count += 1
        return count
    for label in labels:
        line = {c: label[c] for c in EXPORT_COLUMNS if label.get(c) is not None}
        out.write(orjson.dumps(line).decode() + "\n")
        count += 1
    return count
