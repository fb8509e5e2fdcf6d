"""Load rows from JSONL, JSON, CSV, Parquet, a pandas DataFrame or a list of dicts.

Text files are UTF-8, with or without a byte order mark. A file that cannot be read (not
UTF-8, invalid JSON or CSV, nested too deeply) is a ``DatasetError`` naming the file and line.
"""

from __future__ import annotations

import ast
import codecs
import csv
import itertools
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import orjson

from ragmeter.datasets._agent_items import tool_calls_of
from ragmeter.datasets._columns import dataset_from_raws
from ragmeter.datasets.digest import FileOrigin
from ragmeter.datasets.row import (
    FIELD_ALIASES,
    LIST_FIELDS,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    TooLongNumber,
)
from ragmeter.datasets.table import Dataset
from ragmeter.errors import DatasetError, LimitError, RagmeterError
from ragmeter.store.bulk import collector_paused

if TYPE_CHECKING:
    import pandas as pd

    from ragmeter.config import ServerConfig

__all__ = ["MAX_TOOL_CALLS", "Dataset", "DatasetLimits", "DatasetSource", "load_dataset"]

#: tool calls of one row on each side, for the library and the CLI (the service's is
#: ``[server] max_tool_calls``): 256 x 256 pairs are aligned exactly in well under a second
MAX_TOOL_CALLS = 256

#: a BOM-tolerant UTF-8 (Excel and Windows tools write one)
_ENCODING = "utf-8-sig"


@dataclass(frozen=True, slots=True)
class DatasetLimits:
    """Caps on loading rows. The library and the CLI use the defaults (rows nest at most
    ``MAX_DEPTH`` deep, any number of rows); the service builds them from ``[server]``,
    whose settings its messages then name."""

    max_depth: int = MAX_DEPTH
    max_rows: int | None = None
    #: bytes of text read from one file once decompressed (TREC files may be gzip); the
    #: service's is ``[server] max_upload_mb``, as for the upload itself
    max_bytes: int | None = None
    #: items of one list in a row (ids, contexts, judged ids; a TREC query's results and
    #: judgements); the service's is ``[server] max_row_items``
    max_row_items: int | None = None
    #: tool calls of one row, on each side (the calls its ``messages`` made, its
    #: ``reference_tool_calls``): aligning them costs their product; the service's is
    #: ``[server] max_tool_calls``
    max_tool_calls: int | None = MAX_TOOL_CALLS
    #: fields (columns) over all rows; the service's is ``[server] max_dataset_fields``
    max_fields: int | None = None
    #: how messages name the settings (``[server]``); empty for the library's own limits
    section: str = ""

    @classmethod
    def from_server(cls, server: ServerConfig) -> DatasetLimits:
        return cls(
            max_depth=server.max_json_depth,
            max_rows=server.max_rows,
            max_bytes=int(server.max_upload_mb * 1_000_000),
            max_row_items=server.max_row_items,
            max_tool_calls=server.max_tool_calls,
            max_fields=server.max_dataset_fields,
            section="[server]",
        )

    def setting(self, name: str) -> str:
        return f"{self.section} {name}" if self.section else ""


DatasetSource: TypeAlias = (
    "str | os.PathLike[str] | Dataset | pd.DataFrame | Iterable[Mapping[str, Any]]"
)

_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def load_dataset(
    source: Any,
    *,
    name: str | None = None,
    limits: DatasetLimits | None = None,
    key_ahead: bool = False,
) -> Dataset:
    """Load and validate every row before any work; a bad row raises ``DatasetError``.
    ``name`` is how errors and ``Dataset.source`` call the rows (default: the path, or
    ``<rows>`` for a list); ``limits`` caps depth and row count (see ``DatasetLimits``).
    ``key_ahead``: rows read from a file will be stored, so its key (``FileOrigin.key``) is
    computed while they are read."""
    limits = limits or DatasetLimits()
    if isinstance(source, Dataset):
        return source
    with collector_paused():  # dicts by the hundred thousand, in no cycle
        return _load(source, name, limits, key_ahead)


def _load(source: Any, name: str | None, limits: DatasetLimits, key_ahead: bool) -> Dataset:
    if isinstance(source, str | os.PathLike):
        return _load_path(Path(source), name or str(source), limits, key_ahead)
    if _is_dataframe(source):
        return _from_records(_dataframe_records(source), name or "<DataFrame>", limits)
    if isinstance(source, Mapping):
        raise DatasetError("expected rows (a list of dicts), got a single dict")
    if isinstance(source, Iterable):
        return _from_list(source, name or "<rows>", limits)
    raise DatasetError(
        f"cannot load a dataset from {type(source).__name__}; give a path (.jsonl, .json, "
        ".csv, .parquet), a pandas DataFrame or a list of dicts"
    )


def _from_records(
    records: Iterable[tuple[int, Any]], source: str, limits: DatasetLimits, *, lines: bool = True
) -> Dataset:
    """Read every record, then check them all (a column at a time). When reading stops
    early (invalid JSON, the row cap) the rows read before are checked first, so the first
    problem in the file is the one named, as when rows were checked as they were read."""
    raws: list[Any] = []
    numbers: list[int | None] = []
    try:
        for line, raw in records:
            if limits.max_rows is not None and len(raws) >= limits.max_rows:
                raise _too_many(source, limits)
            raws.append(raw)
            numbers.append(line)
    except (RagmeterError, UnicodeDecodeError):
        _check(raws, numbers if lines else None, source, limits)
        raise
    return _check(raws, numbers if lines else None, source, limits)


def _from_list(rows: Iterable[Any], source: str, limits: DatasetLimits) -> Dataset:
    """Rows given in memory (a list, or any iterable: read up to one past the row cap)."""
    cap = limits.max_rows
    if isinstance(rows, list):
        raws = rows
    else:
        raws = list(rows if cap is None else itertools.islice(rows, cap + 1))
    if cap is not None and len(raws) > cap:
        _check(raws[:cap], None, source, limits)
        raise _too_many(source, limits)
    return _check(raws, None, source, limits)


def _too_many(source: str, limits: DatasetLimits) -> LimitError:
    return LimitError(
        f"{source} holds more than {limits.max_rows} rows",
        setting=limits.setting("max_rows") or "max_rows",
        status=413,
    )


def _check(
    raws: Sequence[Any], lines: Sequence[int | None] | None, source: str, limits: DatasetLimits
) -> Dataset:
    if limits.max_fields is not None:
        _check_fields(raws, lines, source, limits.max_fields, limits)
    dataset = dataset_from_raws(
        raws, lines, source, limits.max_depth, limits.setting("max_json_depth")
    )
    if limits.max_row_items is not None:
        _check_items(dataset, limits.max_row_items, limits)
    if limits.max_tool_calls is not None:
        _check_calls(dataset, limits.max_tool_calls, limits)
    return dataset


def _check_fields(
    raws: Sequence[Any],
    lines: Sequence[int | None] | None,
    source: str,
    cap: int,
    limits: DatasetLimits,
) -> None:
    """LimitError naming the row (and line) whose fields take the rows past ``cap``."""
    fields: set[Any] = set()
    for row, raw in enumerate(raws):
        if isinstance(raw, Mapping):
            fields.update(raw)
        if len(fields) > cap:
            line = lines[row] if lines is not None else None
            where = f"row {row}" + (f" (line {line})" if line is not None else "")
            raise LimitError(
                f"{source} {where} brings the rows' fields to {len(fields):,}; a dataset holds "
                f"at most {cap:,} fields",
                setting=limits.setting("max_dataset_fields") or "max_dataset_fields",
                status=413,
            )


def _check_calls(dataset: Dataset, cap: int, limits: DatasetLimits) -> None:
    """LimitError naming the first row and field holding more than ``cap`` tool calls."""
    for field in ("messages", "reference_tool_calls"):
        if not dataset.has(field):
            continue
        for row, value in enumerate(dataset.column(field)):
            size = len(tool_calls_of(value)) if field == "messages" and value else len(value or ())
            if size > cap:
                raise LimitError(
                    f"{dataset.source} row {row} field '{field}' holds {size:,} tool calls; a "
                    f"row holds at most {cap:,}",
                    setting=limits.setting("max_tool_calls") or "max_tool_calls",
                    status=413,
                )


#: the row fields that hold many items (lists, and graded relevance's id -> grade)
_MANY = (*sorted(LIST_FIELDS), "reference_relevance")


def _check_items(dataset: Dataset, cap: int, limits: DatasetLimits) -> None:
    """LimitError naming the first row and field holding more than ``cap`` items."""
    for field in _MANY:
        if not dataset.has(field):
            continue
        row = next((i for i, v in enumerate(dataset.column(field)) if v and len(v) > cap), None)
        if row is not None:
            size = len(dataset.column(field)[row])
            raise LimitError(
                f"{dataset.source} row {row} field '{field}' holds {size:,} items; a row holds "
                f"at most {cap:,}",
                setting=limits.setting("max_row_items") or "max_row_items",
                status=413,
            )


def _load_path(path: Path, name: str, limits: DatasetLimits, key_ahead: bool) -> Dataset:
    """The rows of file ``path``, knowing it as their origin when it did not change while
    they were read."""
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is not None and path.is_file():
        origin = FileOrigin.of(path, key_ahead=key_ahead)
        dataset = _read_path(path, name, limits)
        if FileOrigin.of(path) == origin:
            dataset.origin = origin
        return dataset
    return _read_path(path, name, limits)


def _read_path(path: Path, name: str, limits: DatasetLimits) -> Dataset:
    """The rows of file ``path`` by its extension's format."""
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise DatasetError(
            f"{name}: unknown dataset format '{path.suffix}'; "
            f"use one of {', '.join(sorted(_SUFFIXES))}"
        )
    if not path.is_file():
        raise DatasetError(f"{name}: no such file")
    try:
        if kind == "jsonl":
            return _from_records(_jsonl_records(path, name, limits), name, limits)
        if kind == "json":
            return _from_records(_json_records(path, name, limits), name, limits, lines=False)
        if kind == "csv":
            return _from_records(_csv_records(path, name), name, limits)
    except UnicodeDecodeError:
        raise DatasetError(
            "is not UTF-8 text; save it as UTF-8", source=name, line=_undecodable_line(path)
        ) from None
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a bad file
        raise DatasetError(f"{name}: cannot read Parquet: {exc}") from exc
    return _from_records(_dataframe_records(frame), name, limits, lines=False)


def _undecodable_line(path: Path) -> int:
    """The line holding the first byte that is not UTF-8."""
    decoder = codecs.getincrementaldecoder(_ENCODING)()
    line = 1
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                return line + block.count(b"\n", 0, max(exc.start, 0))
            line += block.count(b"\n")
    return line


def _int(text: str) -> int | TooLongNumber:
    """A JSON integer, unless it is too long to convert: then its length, which the row
    check reports naming the field (``int()`` refuses over 4,300 digits, and slowly)."""
    digits = len(text) - text.startswith("-")
    return TooLongNumber(digits) if digits > MAX_INT_DIGITS else int(text)


#: bytes.translate table: digits stay "0", every other byte becomes a space
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))


def _exact_with_orjson(data: bytes) -> bool:
    """Whether orjson reads every number of ``data`` exactly: it reads an integer past 64
    bits as a float, where ``json`` keeps it exact, so 19 digits in a row anywhere (in a
    number or not) send the text to ``json`` (a scan of ~1 GB/s)."""
    return b"0" * 19 not in data.translate(_DIGITS_ONLY)


def _file_exact_with_orjson(path: Path) -> bool:
    """``_exact_with_orjson`` of a file, read 4 MB at a time."""
    tail = b""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            if not _exact_with_orjson(tail + chunk):
                return False
            tail = chunk[-18:]
    return True


def _loads(text: str, exact: bool | None = None) -> Any:
    """``json.loads`` for rows: an integer too long to convert is left for the row check.
    orjson reads first (several times faster) where it reads exactly (``exact``, or
    ``_exact_with_orjson`` of ``text`` when not given). What orjson refuses (NaN, a lone
    surrogate, invalid JSON) is read by ``json``, whose answer or error (with its line and
    column) is the one kept, so both read any text the same way."""
    if exact if exact is not None else _exact_with_orjson(text.encode(errors="surrogatepass")):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text, parse_int=_int)


def _parse_json(
    text: str,
    name: str,
    limits: DatasetLimits,
    line: int | None = None,
    exact: bool | None = None,
) -> Any:
    """JSON from one line or file; invalid or too deeply nested JSON names where (and the
    setting that limits the depth, when the service's)."""
    try:
        return _loads(text, exact)
    except json.JSONDecodeError as exc:
        at = f"at column {exc.colno}" if line is not None else f"at line {exc.lineno}"
        raise DatasetError(f"invalid JSON: {exc.msg} {at}", source=name, line=line) from None
    except RecursionError:
        setting = limits.setting("max_json_depth")
        raise DatasetError(
            f"nested too deeply to read (rows may nest {limits.max_depth} levels at most"
            + (f", {setting})" if setting else ")"),
            source=name,
            line=line,
        ) from None


def _jsonl_records(path: Path, name: str, limits: DatasetLimits) -> Iterator[tuple[int, Any]]:
    exact = _file_exact_with_orjson(path)  # one scan of the file, not one per line
    with path.open(encoding=_ENCODING) as handle:
        for number, text in enumerate(handle, start=1):
            if text.strip():
                yield number, _parse_json(text, name, limits, number, exact)


def _json_records(path: Path, name: str, limits: DatasetLimits) -> Iterator[tuple[int, Any]]:
    data = _parse_json(path.read_text(encoding=_ENCODING), name, limits)
    if isinstance(data, Mapping) and isinstance(data.get("datasets"), list):
        data = data["datasets"]  # a DB-GPT evaluation request body
    if not isinstance(data, list):
        raise DatasetError(f"{name}: expected a JSON array of rows")
    yield from enumerate(data, start=1)


def _line_breaks(cells: Sequence[str]) -> int:
    """Line breaks inside quoted cells: how many lines past its first a record spans."""
    return sum(c.count("\n") + c.count("\r") - c.count("\r\n") for c in cells)


def _csv_records(path: Path, name: str) -> Iterator[tuple[int, Any]]:
    """Rows of a CSV file with the line each starts on (a cell may span lines)."""
    with path.open(encoding=_ENCODING, newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if header is None:
                return
            for row_number, cells in enumerate(c for c in reader if c):
                line = reader.line_num - _line_breaks(cells)
                if len(cells) > len(header):
                    raise DatasetError("more cells than header columns", source=name, line=line)
                record = dict(zip(header, cells, strict=False))
                yield line, _parse_csv_record(record, name, row_number, line)
        except csv.Error as exc:
            raise DatasetError(f"invalid CSV: {exc}", source=name, line=reader.line_num) from None


def _parse_csv_record(record: dict[str, Any], name: str, row: int, line: int) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for key, cell in record.items():
        if cell is None or cell == "":
            continue
        canonical = FIELD_ALIASES.get(key)
        if canonical in LIST_FIELDS or canonical == "doc_name":
            parsed[key] = _parse_list_cell(cell, canonical == "doc_name")
        elif canonical in ("metadata", "reference_relevance"):
            try:
                parsed[key] = _loads(cell)
            except (json.JSONDecodeError, RecursionError):
                raise DatasetError(
                    "expected a JSON object", row=row, field=canonical, source=name, line=line
                ) from None
        else:
            parsed[key] = cell
    return parsed


def _parse_list_cell(cell: str, allow_scalar: bool) -> Any:
    """A list cell is a JSON or Python list literal; any other text is a one-item list."""
    text = cell.strip()
    if text.startswith("["):
        try:
            return _loads(text)
        except (json.JSONDecodeError, RecursionError):
            try:
                return ast.literal_eval(text)  # lists written by str(list), as RAGAS exports
            except (ValueError, SyntaxError, RecursionError, MemoryError):
                return text  # validation then names the field and what was expected
    return cell if allow_scalar else [cell]


def _is_dataframe(obj: Any) -> bool:
    module = type(obj).__module__
    return module.startswith("pandas") and type(obj).__name__ == "DataFrame"


def _plain(value: Any) -> Any:
    """Turn numpy/pandas values into plain Python ones; missing values into None."""
    if value is None or type(value) is str:
        return value
    if type(value) is list and _all_text(value):
        return value  # already plain: a list of strings, as most list cells are
    if hasattr(value, "tolist") and not isinstance(value, str):
        return _plain(value.tolist())
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in {"NAType", "NaTType"}:
        return None
    return value


def _all_text(values: list[Any]) -> bool:
    """Whether a list holds only strings (one C-speed join)."""
    try:
        "".join(values)
    except TypeError:
        return False
    return True


def _dataframe_records(frame: pd.DataFrame) -> Iterator[tuple[int, Any]]:
    columns = [str(c) for c in frame.columns]
    for index, values in enumerate(frame.itertuples(index=False, name=None), start=1):
        record = {c: _plain(v) for c, v in zip(columns, values, strict=True)}
        for column in columns:
            if FIELD_ALIASES.get(column) == "reference_relevance":
                record[column] = _struct_grades(record[column])
        yield index, record


def _struct_grades(value: Any) -> Any:
    """Graded relevance read back from Parquet: pyarrow stores the rows' dicts as one struct
    holding every row's ids, so each row reads back with the other rows' ids set to None.
    An id with no grade is not judged by that row."""
    if isinstance(value, dict):
        return {key: grade for key, grade in value.items() if grade is not None}
    return value
