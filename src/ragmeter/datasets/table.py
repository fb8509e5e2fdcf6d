"""``Dataset``: validated rows held as columns (one list per canonical field, None where a row
lacks it), so batch work reads whole columns; ``Row`` objects are made only when asked for."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache
from itertools import islice, repeat
from typing import Any, TypeVar, overload

import numpy as np

from ragmeter.datasets.agent import plain_items
from ragmeter.datasets.digest import FileOrigin
from ragmeter.datasets.row import Row

__all__ = ["FIELDS", "Dataset", "FieldColumn", "LazyColumn"]

T = TypeVar("T")

#: the columns of a dataset, in ``Row``'s field order (``extra``: unknown input fields)
FIELDS: tuple[str, ...] = (
    "query",
    "doc_name",
    "reference_contexts",
    "reference",
    "response",
    "retrieved_contexts",
    "retrieved_ids",
    "reference_ids",
    "reference_relevance",
    "messages",
    "reference_tool_calls",
    "reference_topics",
    "available_tools",
    "metadata",
    "extra",
)
#: columns holding models (``datasets.agent``), made plain in ``raw``
_MODEL_FIELDS = frozenset({"messages", "reference_tool_calls", "available_tools"})
_DICT_FIELDS = frozenset({"metadata", "extra"})
#: rows ``Dataset.each_raw`` makes at once
_RAW_BATCH = 2000
_NO_EXTRA: dict[str, Any] = {}


@cache
def _raw_maker(names: tuple[str, ...], extra: bool) -> Callable[..., dict[str, Any]]:
    """A function of one value per name (and the row's extra fields, when ``extra``) making
    the row's dict: a dict display, the fastest way Python has to make a dict, written for
    these names (as ``dataclasses`` writes its methods). Only names of ``FIELDS`` are
    written into the code."""
    if not set(names) <= set(FIELDS):
        raise ValueError(f"not dataset fields: {sorted(set(names) - set(FIELDS))}")
    params = [f"v{i}" for i in range(len(names))] + (["extra"] if extra else [])
    items = [f"{name!r}: v{i}" for i, name in enumerate(names)] + (["**extra"] if extra else [])
    maker: Callable[..., dict[str, Any]] = eval(
        f"lambda {', '.join(params)}: {{{', '.join(items)}}}"
    )
    return maker


class LazyColumn(Sequence[T]):
    """A column whose values are computed when read (``value(i)``), never stored."""

    __slots__ = ("_length", "_value")

    def __init__(self, length: int, value: Callable[[int], T]) -> None:
        self._length = length
        self._value = value

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._value(i) for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._value(index)

    def __iter__(self) -> Iterator[T]:
        return map(self._value, range(self._length))


class FieldColumn(LazyColumn[T]):
    """A ``LazyColumn`` that is, at the rows ``same`` marks, the value of a dataset column
    (``field``) or, with a ``cut``, its first ``cut`` items, so a reader that asks whether a
    row's value is its field need not compute or compare it there."""

    __slots__ = ("cut", "field", "same")

    def __init__(
        self,
        length: int,
        value: Callable[[int], T],
        field: Sequence[Any],
        same: np.ndarray,
        cut: int | None = None,
    ) -> None:
        super().__init__(length, value)
        self.field = field
        self.same = same
        self.cut = cut


class Dataset(Sequence[Row]):
    """Validated rows in order, with the name of where they came from, held as columns.

    ``column(name)`` is one field of every row (None where a row lacks it); indexing or
    iterating makes ``Row`` objects. Built by ``load_dataset`` (which checks whole columns at
    once) or from ``Row`` objects.
    """

    def __init__(
        self, rows: Iterable[Row] = (), source: str = "<rows>", lines: Sequence[int | None] = ()
    ) -> None:
        given = list(rows)
        columns: dict[str, list[Any]] = {}
        for name in FIELDS:
            values = [getattr(row, name) for row in given]
            if name in _DICT_FIELDS:
                values = [v or None for v in values]
            if any(v is not None for v in values):
                columns[name] = values
        self._setup(columns, len(given), source, lines)
        self._given: list[Row] | None = given

    @classmethod
    def from_columns(
        cls,
        columns: Mapping[str, list[Any]],
        length: int,
        source: str = "<rows>",
        lines: Sequence[int | None] = (),
    ) -> Dataset:
        """A dataset over already validated columns (each ``length`` long, None where absent;
        ``metadata`` and ``extra`` None where empty). The lists are kept, not copied."""
        unknown = set(columns) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown columns: {', '.join(sorted(unknown))}")
        dataset = cls.__new__(cls)
        dataset._setup(dict(columns), length, source, lines)
        dataset._given = None
        return dataset

    @classmethod
    def of(cls, rows: Dataset | Iterable[Row]) -> Dataset:
        """``rows`` as a dataset (itself if it already is one)."""
        return rows if isinstance(rows, Dataset) else cls(rows)

    def _setup(
        self, columns: dict[str, list[Any]], length: int, source: str, lines: Sequence[int | None]
    ) -> None:
        for name, values in columns.items():
            if len(values) != length:
                raise ValueError(f"column {name} has {len(values)} values for {length} rows")
        self._columns = columns
        #: the columns present, in ``Row``'s field order (how ``raw`` lists them)
        self._order = [name for name in FIELDS if name in columns]
        self._length = length
        self.source = source
        #: the file the rows were read from, unchanged (set by the loader); None for rows
        #: given in memory or made from other rows (``take``, ``with_columns``)
        self.origin: FileOrigin | None = None
        self._lines: list[int | None] | None = list(lines) if lines else None
        self._lacking: dict[str, np.ndarray] = {}

    # -- columns ---------------------------------------------------------------------------

    def column(self, name: str) -> list[Any]:
        """One field of every row, in row order; None where a row lacks it. Read-only: the
        list may be shared with the dataset."""
        values = self._columns.get(name)
        if values is not None:
            return values
        if name not in FIELDS:
            raise KeyError(f"no column '{name}'; columns are {', '.join(FIELDS)}")
        return [None] * self._length

    def has(self, name: str) -> bool:
        """Whether any row gives ``name``."""
        return name in self._columns

    def lacking(self, name: str) -> np.ndarray:
        """Boolean mask of the rows that lack ``name`` (computed once per field)."""
        mask = self._lacking.get(name)
        if mask is None:
            values = self._columns.get(name)
            if values is None:
                mask = np.ones(self._length, dtype=bool)
            elif None in values:
                mask = np.fromiter((v is None for v in values), dtype=bool, count=self._length)
            else:
                mask = np.zeros(self._length, dtype=bool)
            self._lacking[name] = mask
        return mask

    def with_columns(self, columns: Mapping[str, list[Any]]) -> Dataset:
        """A dataset whose ``columns`` are replaced (what a target fills), sharing the rest."""
        merged = {**self._columns, **columns}
        return Dataset.from_columns(merged, self._length, self.source, self._lines or ())

    def take(self, indices: Sequence[int]) -> Dataset:
        """The rows at ``indices``, in that order (new column lists; values shared). A
        ``range`` of step 1 is sliced (a run's batches: a tenth of the time)."""
        if isinstance(indices, range) and indices.step == 1 and indices.start >= 0:
            start, stop = indices.start, max(indices.start, min(indices.stop, self._length))
            if stop - start != len(indices):
                raise IndexError(f"rows {indices.start}..{indices.stop - 1} of {self._length}")
            columns = {name: values[start:stop] for name, values in self._columns.items()}
            lines = self._lines[start:stop] if self._lines is not None else ()
            return Dataset.from_columns(columns, len(indices), self.source, lines)
        columns = {name: [values[i] for i in indices] for name, values in self._columns.items()}
        lines = [self._lines[i] for i in indices] if self._lines is not None else ()
        return Dataset.from_columns(columns, len(indices), self.source, lines)

    @property
    def lines(self) -> list[int | None]:
        """The source line of each row (None where unknown)."""
        return list(self._lines) if self._lines is not None else [None] * self._length

    def line_of(self, index: int) -> int | None:
        """The line of the source file that held row ``index``, when known."""
        if self._lines is None:
            if not -self._length <= index < self._length:
                raise IndexError(index)
            return None
        return self._lines[index]

    def raw(self, index: int) -> dict[str, Any]:
        """Row ``index`` as a plain dict with canonical names, absent fields left out (as
        ``Row.to_raw``); lists are shared with the dataset."""
        raw: dict[str, Any] = {}
        for name in self._order:
            value = self._columns[name][index]
            if value is not None:
                if name in _MODEL_FIELDS:
                    value = plain_items(value)
                raw[name] = value
        extra = raw.pop("extra", None)
        if extra:
            raw.update(extra)
        return raw

    def raws(self) -> LazyColumn[dict[str, Any]]:
        """``raw(i)`` of every row, made when read."""
        return LazyColumn(self._length, self.raw)

    def each_raw(self) -> Iterator[dict[str, Any]]:
        """``raw(i)`` of every row in order, made ``_RAW_BATCH`` rows at a time column by
        column by a dict display (a third of the time of ``raw`` row by row: storing a
        dataset of a million rows)."""
        if any(name in _MODEL_FIELDS for name in self._order):
            yield from map(self.raw, range(self._length))
            return
        names = tuple(name for name in self._order if name != "extra")
        extra = self._columns.get("extra")
        make = _raw_maker(names, extra is not None)
        columns = [iter(self._columns[name]) for name in names]
        extras = None if extra is None else iter(extra)
        done = 0
        while done < self._length:
            take = min(_RAW_BATCH, self._length - done)
            values = [list(islice(column, take)) for column in columns]
            if extras is not None:
                given = [e if e is not None else _NO_EXTRA for e in islice(extras, take)]
                if not set(names).isdisjoint(set().union(*given)):  # a field in extra (Row's
                    yield from map(self.raw, range(done, done + take))  # API): raw's order
                    done += take
                    continue
                values.append(given)
            rows = list(map(make, *values))
            for name, column in zip(names, values, strict=False):
                if any(map(operator.is_, column, repeat(None))):  # by identity: no __eq__
                    for row, value in zip(rows, column, strict=True):
                        if value is None:
                            del row[name]
            done += take
            yield from rows

    # -- rows ------------------------------------------------------------------------------

    def _row(self, index: int) -> Row:
        if self._given is not None:
            return self._given[index]
        values = {name: column[index] for name, column in self._columns.items()}
        for name in _DICT_FIELDS:
            if values.get(name) is None:
                values[name] = {}
        fields = {name for name, value in values.items() if value is not None}
        if not values["metadata"]:
            fields.discard("metadata")
        if not values["extra"]:
            fields.discard("extra")
        return Row.model_construct(fields, **values)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Row]:
        if self._given is not None:
            return iter(self._given)
        return map(self._row, range(self._length))

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...
    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._row(index)

    def __repr__(self) -> str:
        return f"Dataset({len(self)} rows from {self.source})"
