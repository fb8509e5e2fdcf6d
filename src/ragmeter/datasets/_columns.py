"""Rows (plain dicts) into a column ``Dataset``, checked a whole column at a time.

The check covers what ``row_from_mapping`` checks (field names and aliases, types, unknown
fields, nesting depth, over-long integers, a non-empty query, aligned id lists) with C-speed
passes such as ``"".join(ids)``, which fails unless a list holds only strings. A row the fast
check cannot vouch for (an error, or a value it would have to convert: integer ids, NaN) is
checked alone by ``row_from_mapping``, in row order, so an error names the same row, field,
file and line as the per-row check, and what it accepts lands in the columns as it made it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import chain, repeat
from typing import Any

from ragmeter._grades import plain_grades
from ragmeter.datasets._values import scan
from ragmeter.datasets.agent import (
    AgentFormatError,
    first_user_text,
    read_messages,
    read_tool_calls,
    read_tools,
)
from ragmeter.datasets.row import FIELD_ALIASES, LIST_FIELDS, Row, row_from_mapping
from ragmeter.datasets.table import FIELDS, Dataset

__all__ = ["dataset_from_raws"]

_NONE = type(None)
_TEXT_FIELDS = ("reference", "response")
#: the agent fields read into their one form (``datasets.agent``), each value on its own
_READERS = {
    "messages": read_messages,
    "reference_tool_calls": read_tool_calls,
    "available_tools": read_tools,
}


def dataset_from_raws(
    raws: Sequence[Any],
    lines: Sequence[int | None] | None,
    source: str,
    max_depth: int,
    depth_setting: str,
) -> Dataset:
    """Validate ``raws`` (row ``i`` came from ``lines[i]``, when known) into a dataset; the
    first bad row raises ``DatasetError`` as ``row_from_mapping`` words it."""

    def alone(index: int) -> Row:
        return row_from_mapping(
            raws[index],
            index,
            source=source,
            line=lines[index] if lines else None,
            max_depth=max_depth,
            depth_setting=depth_setting,
        )

    found = _columns(raws, max_depth)
    if found is None:  # nothing to gain from columns here: every row is checked alone
        return Dataset([alone(i) for i in range(len(raws))], source, lines or ())
    columns, doubtful = found
    for index in sorted(doubtful):
        _put(columns, index, alone(index), len(raws))
    return Dataset.from_columns(columns, len(raws), source, lines or ())


def _put(columns: dict[str, list[Any]], index: int, row: Row, length: int) -> None:
    """Row ``index`` of the columns as the per-row check made it."""
    for name in FIELDS:
        value = getattr(row, name)
        if name in ("metadata", "extra") and not value:
            value = None  # empty: the column's None
        if value is not None:
            columns.setdefault(name, [None] * length)[index] = value
        elif name in columns:
            columns[name][index] = None


def _columns(raws: Sequence[Any], max_depth: int) -> tuple[dict[str, list[Any]], set[int]] | None:
    """The columns of ``raws`` and the rows to check alone; None when rows must all be
    checked alone (not all dicts, a field given under two names, non-text keys)."""
    if max_depth < 2 or not raws or set(map(type, raws)) != {dict}:
        return None
    keys: set[Any] = set().union(*raws)
    if any(type(k) is not str for k in keys):
        return None
    named: dict[str, str] = {}
    unknown: list[str] = []
    for key in keys:
        field = FIELD_ALIASES.get(key)
        if field is None:
            unknown.append(key)
        elif field in named:  # aliases of one field: rows may give it twice
            return None
        else:
            named[field] = key
    if "tools_called" in named or not named.keys() & {"query", "messages"}:
        return None  # DeepEval's single-turn calls, or rows with no query at all
    columns: dict[str, list[Any]] = {}
    doubtful: set[int] = set()
    for field in FIELDS:
        if field in named:
            values = list(map(dict.get, raws, repeat(named[field])))
            if field in _READERS:
                values = _read(field, values, max_depth, doubtful)
            else:
                doubtful.update(_check(field, values, max_depth))
            if field == "metadata":  # an empty one is the column's None, as absent
                values = [v if v else None for v in values]
            columns[field] = values
    doubtful.update(_misaligned(columns))
    doubtful.update(_graded_against_ids(columns))
    if "query" not in columns:  # a conversation's query: its first user message
        columns["query"] = _asked(columns["messages"], doubtful)
    if unknown:
        columns["extra"] = _extra(raws, frozenset(unknown), max_depth, doubtful)
    return columns, doubtful


def _check(field: str, values: list[Any], max_depth: int) -> list[int]:
    """Rows whose ``field`` value the fast check cannot vouch for."""
    kinds = set(map(type, values))
    if field == "query":
        if kinds == {str} and all(values):
            return []
        return [i for i, v in enumerate(values) if type(v) is not str or not v]
    if field in _TEXT_FIELDS:
        allowed: set[type] = {str, _NONE}
    elif field in LIST_FIELDS:
        allowed = {list, _NONE}
    elif field == "doc_name":
        allowed = {str, list, _NONE}
    elif field == "reference_relevance":
        return _bad_grades(values)
    else:  # metadata
        return _bad_metadata(values, max_depth)
    bad = [] if kinds <= allowed else [i for i, v in enumerate(values) if type(v) not in allowed]
    if list in kinds:
        bad += _not_all_text(values, only_lists=kinds == {list})
    return bad


def _read(field: str, values: list[Any], max_depth: int, doubtful: set[int]) -> list[Any]:
    """An agent column in its one form; a value the reader refuses makes its row doubtful
    (the per-row check words the error)."""
    read = _READERS[field]
    out: list[Any] = []
    for index, value in enumerate(values):
        if value is not None:
            try:
                value = read(value, max_depth)
            except AgentFormatError:
                doubtful.add(index)
                value = None
        out.append(value)
    return out


def _asked(conversations: list[Any], doubtful: set[int]) -> list[str | None]:
    """Each conversation's first user text; a row with none is doubtful."""
    asked = [None if c is None else first_user_text(c) for c in conversations]
    doubtful.update(i for i, text in enumerate(asked) if text is None)
    return asked


def _not_all_text(values: list[Any], only_lists: bool) -> list[int]:
    """Rows holding a list with an item that is not a string (one C-speed join a row)."""
    lists = values if only_lists else (v for v in values if type(v) is list)
    try:
        deque(map("".join, lists), maxlen=0)
    except TypeError:
        return [
            i
            for i, v in enumerate(values)
            if type(v) is list and not all(type(item) is str for item in v)
        ]
    return []


def _bad_grades(values: list[Any]) -> list[int]:
    """Rows whose grades are not an object of text ids to whole numbers within the limit
    (integer ids and integral floats are fine too, but converted by the per-row check)."""
    given = [v for v in values if v is not None]
    if all(type(v) is dict for v in given):  # usually: every row's grades checked at once
        keys = set(map(type, chain.from_iterable(given)))
        if keys <= {str} and plain_grades(list(chain.from_iterable(map(dict.values, given)))):
            return []
    return [i for i, v in enumerate(values) if v is not None and not _plain_grades(v)]


def _plain_grades(value: Any) -> bool:
    """A dict of text ids to ints within the limit (C-speed passes over its keys and values)."""
    return type(value) is dict and set(map(type, value)) <= {str} and plain_grades(value.values())


def _nested_ok(value: Any, max_depth: int) -> bool:
    """Whether a field's value nests at most ``max_depth`` - 1 deep, with no over-long int."""
    depth, digits = scan(value, max_depth)
    return 1 + depth <= max_depth and digits is None


def _bad_metadata(values: list[Any], max_depth: int) -> list[int]:
    return [
        i
        for i, v in enumerate(values)
        if v is not None
        and not (type(v) is dict and all(type(k) is str for k in v) and _nested_ok(v, max_depth))
    ]


def _extra(
    raws: Sequence[Any], unknown: frozenset[str], max_depth: int, doubtful: set[int]
) -> list[Any]:
    """The ``extra`` column: each row's unknown fields in its order (None where it has
    none). One pass over each row's own fields, however many distinct names the rows use."""
    extra: list[Any] = [None] * len(raws)
    for index, raw in enumerate(raws):
        held = {key: value for key, value in raw.items() if key in unknown}
        if held:
            extra[index] = held
            if not all(_nested_ok(value, max_depth) for value in held.values()):
                doubtful.add(index)
    return extra


def _graded_against_ids(columns: dict[str, list[Any]]) -> list[int]:
    """Rows giving both reference_ids and reference_relevance (the per-row check makes sure
    they agree)."""
    ids, grades = columns.get("reference_ids"), columns.get("reference_relevance")
    if ids is None or grades is None:
        return []
    return [i for i, (a, b) in enumerate(zip(ids, grades, strict=True)) if a is not None and b]


def _misaligned(columns: dict[str, list[Any]]) -> list[int]:
    """Rows whose ids and retrieved contexts differ in length."""
    ids, texts = columns.get("retrieved_ids"), columns.get("retrieved_contexts")
    if ids is None or texts is None:
        return []
    return [
        i
        for i, (a, b) in enumerate(zip(ids, texts, strict=True))
        if type(a) is list and type(b) is list and len(a) != len(b)
    ]
