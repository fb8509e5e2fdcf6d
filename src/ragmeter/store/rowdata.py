"""A result's row in SQL: its own copy (``results.raw_dataset``, when a target filled the row)
or else the run's dataset row at the result's ``row_index`` (``dataset_rows``, the row stored
once). Queries outer-join ``dataset_rows`` with ``row_of`` and read a field with
``row_field``; SQLite and PostgreSQL each get their own JSON operators."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, String, and_, case, literal
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from ragmeter.store.models import DatasetRowRecord

__all__ = ["cut_field", "input_value", "row_field", "row_of"]


class _TextField(FunctionElement[Any]):
    """SQL: field ``key`` of a text column holding a JSON object, as text."""

    type = String()
    name = "json_text_field"
    inherit_cache = True


class _ValueField(FunctionElement[Any]):
    """SQL: field ``key`` of a text column holding a JSON object, as JSON (decoded on read)."""

    type = JSON()
    name = "json_value_field"
    inherit_cache = True


def _parts(element: FunctionElement[Any], compiler: SQLCompiler, **kw: Any) -> tuple[str, str]:
    column, key = list(element.clauses)
    return compiler.process(column, **kw), compiler.process(key, **kw)


@compiles(_TextField)
def _text_field(element: _TextField, compiler: SQLCompiler, **kw: Any) -> str:
    column, key = _parts(element, compiler, **kw)
    return f"(CAST({column} AS JSON) ->> {key})"


@compiles(_ValueField)
def _value_field(element: _ValueField, compiler: SQLCompiler, **kw: Any) -> str:
    column, key = _parts(element, compiler, **kw)
    return f"(CAST({column} AS JSON) -> {key})"


@compiles(_TextField, "sqlite")
def _sqlite_text_field(element: _TextField, compiler: SQLCompiler, **kw: Any) -> str:
    column, key = _parts(element, compiler, **kw)
    return f"json_extract({column}, '$.\"' || {key} || '\"')"


@compiles(_ValueField, "sqlite")
def _sqlite_value_field(element: _ValueField, compiler: SQLCompiler, **kw: Any) -> str:
    column, key = _parts(element, compiler, **kw)
    return f"json_quote(json_extract({column}, '$.\"' || {key} || '\"'))"


def row_of(results: Any, dataset_id: int) -> Any:
    """Join condition: the ``dataset_rows`` row of each result of a run whose dataset is
    ``dataset_id`` (only for results without their own copy)."""
    return and_(
        DatasetRowRecord.dataset_id == dataset_id,
        DatasetRowRecord.position == results.row_index,
        results.raw_dataset.is_(None),
    )


def row_field(results: Any, key: str, *, text: bool = False) -> Any:
    """SQL: field ``key`` of each result's row (as text, or as its JSON value), from the
    result's own copy or its dataset row (joined by ``row_of``)."""
    if text:
        own: Any = results.raw_dataset[key].as_string()
        stored: Any = _TextField(DatasetRowRecord.data, literal(key))
    else:
        own = results.raw_dataset[key]
        stored = _ValueField(DatasetRowRecord.data, literal(key))
    return case((results.raw_dataset.is_(None), stored), else_=own)


def cut_field(name: str, cut: int | None) -> str:
    """How a plain result names what its metric was given: field ``name`` of its row, or
    ``name[:k]`` for the field's first ``cut`` items (a ranking metric's list cut to its
    depth)."""
    return name if cut is None else f"{name}[:{cut}]"


def input_value(row: dict[str, Any], field: str | None) -> Any:
    """What a plain result's metric was given (``field`` as ``cut_field`` names it) of its
    row ``row``; None for no field."""
    if field is None:
        return None
    if not field.endswith("]"):
        return row.get(field)
    name, _, cut = field[:-1].partition("[:")
    value = row.get(name)
    return None if value is None else value[: int(cut)]
