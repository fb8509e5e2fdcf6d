"""Load rows from JSONL, JSON, CSV, Parquet, a pandas DataFrame or a list of dicts."""

from __future__ import annotations

import ast
import csv
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ragmeter.datasets.row import FIELD_ALIASES, LIST_FIELDS, Row, row_from_mapping
from ragmeter.errors import DatasetError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Dataset", "DatasetSource", "load_dataset"]


class Dataset(Sequence[Row]):
    """Validated rows in order, with the name of where they came from."""

    def __init__(
        self, rows: Sequence[Row], source: str = "<rows>", lines: Sequence[int | None] = ()
    ) -> None:
        self._rows = list(rows)
        self.source = source
        self._lines = list(lines) if lines else [None] * len(self._rows)

    def line_of(self, index: int) -> int | None:
        """The line of the source file that held row ``index``, when known."""
        return self._lines[index]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows)

    def __getitem__(self, index: int) -> Row:  # type: ignore[override]
        return self._rows[index]

    def __repr__(self) -> str:
        return f"Dataset({len(self)} rows from {self.source})"


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


def load_dataset(source: Any, *, name: str | None = None) -> Dataset:
    """Load and validate every row before any work; a bad row raises ``DatasetError``.
    ``name`` is how errors call rows given as a list (default ``<rows>``)."""
    if isinstance(source, Dataset):
        return source
    if isinstance(source, str | os.PathLike):
        return _load_path(Path(source))
    if _is_dataframe(source):
        return _from_records(_dataframe_records(source), "<DataFrame>")
    if isinstance(source, Mapping):
        raise DatasetError("expected rows (a list of dicts), got a single dict")
    if isinstance(source, Iterable):
        return _from_records(enumerate(source, start=1), name or "<rows>", lines=False)
    raise DatasetError(
        f"cannot load a dataset from {type(source).__name__}; give a path (.jsonl, .json, "
        ".csv, .parquet), a pandas DataFrame or a list of dicts"
    )


def _from_records(
    records: Iterable[tuple[int, Any]], source: str, *, lines: bool = True
) -> Dataset:
    rows: list[Row] = []
    numbers: list[int | None] = []
    for index, (line, raw) in enumerate(records):
        number = line if lines else None
        rows.append(row_from_mapping(raw, index, source=source, line=number))
        numbers.append(number)
    return Dataset(rows, source, numbers)


def _load_path(path: Path) -> Dataset:
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise DatasetError(
            f"{path}: unknown dataset format '{path.suffix}'; "
            f"use one of {', '.join(sorted(_SUFFIXES))}"
        )
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    name = str(path)
    if kind == "jsonl":
        return _from_records(_jsonl_records(path), name)
    if kind == "json":
        return _from_records(_json_records(path), name, lines=False)
    if kind == "csv":
        return _from_records(_csv_records(path), name)
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a bad file
        raise DatasetError(f"{path}: cannot read Parquet: {exc}") from exc
    return _from_records(_dataframe_records(frame), name, lines=False)


def _jsonl_records(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                yield number, json.loads(text)
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    f"{path} line {number}: invalid JSON: {exc.msg} at column {exc.colno}"
                ) from None


def _json_records(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: invalid JSON: {exc.msg} at line {exc.lineno}") from None
    if isinstance(data, Mapping) and isinstance(data.get("datasets"), list):
        data = data["datasets"]  # a DB-GPT evaluation request body
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of rows")
    yield from enumerate(data, start=1)


def _csv_records(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        for row_number, record in enumerate(reader):
            line = row_number + 2  # header is line 1
            yield line, _parse_csv_record(record, path, row_number, line)


def _parse_csv_record(record: dict[str, Any], path: Path, row: int, line: int) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for key, cell in record.items():
        if key is None:
            raise DatasetError("more cells than header columns", source=str(path), line=line)
        if cell is None or cell == "":
            continue
        canonical = FIELD_ALIASES.get(key)
        if canonical in LIST_FIELDS or canonical == "doc_name":
            parsed[key] = _parse_list_cell(cell, canonical == "doc_name")
        elif canonical == "metadata":
            try:
                parsed[key] = json.loads(cell)
            except json.JSONDecodeError:
                raise DatasetError(
                    "expected a JSON object", row=row, field="metadata", source=str(path), line=line
                ) from None
        else:
            parsed[key] = cell
    return parsed


def _parse_list_cell(cell: str, allow_scalar: bool) -> Any:
    """A list cell is a JSON or Python list literal; any other text is a one-item list."""
    text = cell.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            try:
                return ast.literal_eval(text)  # lists written by str(list), as RAGAS exports
            except (ValueError, SyntaxError):
                return text  # validation then names the field and what was expected
    return cell if allow_scalar else [cell]


def _is_dataframe(obj: Any) -> bool:
    module = type(obj).__module__
    return module.startswith("pandas") and type(obj).__name__ == "DataFrame"


def _plain(value: Any) -> Any:
    """Turn numpy/pandas values into plain Python ones; missing values into None."""
    if value is None:
        return None
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


def _dataframe_records(frame: pd.DataFrame) -> Iterator[tuple[int, Any]]:
    columns = [str(c) for c in frame.columns]
    for index, values in enumerate(frame.itertuples(index=False, name=None), start=1):
        yield index, {c: _plain(v) for c, v in zip(columns, values, strict=True)}
