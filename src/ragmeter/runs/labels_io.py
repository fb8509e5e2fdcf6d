"""Human labels matched to the rows of a stored dataset version, and back: a label names its
row by the row's own ``id`` (``row_id``), else its query text (which must match exactly one
row, or several of which one is at the ``row_index`` the label also gives), else its
``row_index``; an export names each row by its id when it has one, else by its
query, and gives its index too, so it imports again to the same labels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.errors import ConfigError, DatasetError, clip
from ragmeter.runs.storage.labels import Label, LabelStore, NewLabel, check_label
from ragmeter.runs.storage.store import RunStore
from ragmeter.wire.labels import LabelIn

__all__ = ["label_dataset", "label_rows", "resolve_labels"]


def label_dataset(runs: RunStore, *, run_id: str | None, dataset: str | None) -> int:
    """The id of the dataset version labels go to: a run's (``run_id``) or a dataset's
    (``NAME``: its newest version, ``NAME@V``, or an id); exactly one must be given."""
    if (run_id is None) == (dataset is None):
        raise ConfigError("name a run or a dataset (one of them)")
    if run_id is not None:
        return LabelStore(runs.store).dataset_of_run(run_id)
    return int(runs.dataset(str(dataset)).id)


def _wanted(labels: Sequence[LabelIn]) -> tuple[set[str], set[str]]:
    ids = {str(lb.row_id) for lb in labels if lb.row_id is not None}
    queries = {lb.query for lb in labels if lb.row_id is None and lb.query is not None}
    return ids, queries


def _index(
    runs: RunStore, dataset_id: int, labels: Sequence[LabelIn]
) -> tuple[dict[str, list[int]], dict[str, list[int]], int]:
    """Positions of the rows each wanted id and query names, and how many rows there are
    (the rows are read only when a label names one by id or query)."""
    ids, queries = _wanted(labels)
    by_id: dict[str, list[int]] = {}
    by_query: dict[str, list[int]] = {}
    record = runs.dataset(dataset_id)
    if ids or queries:
        for position, row in enumerate(runs.iter_dataset_rows(dataset_id)):
            if row.get("id") is not None and str(row["id"]) in ids:
                by_id.setdefault(str(row["id"]), []).append(position)
            if row.get("query") in queries:
                by_query.setdefault(str(row["query"]), []).append(position)
    return by_id, by_query, int(record.row_count)


def _position(
    label: LabelIn, by_id: dict[str, list[int]], by_query: dict[str, list[int]], rows: int
) -> int:
    """The row ``label`` names; ValueError why none."""
    field = _naming_field(label)
    if field == "row_index":
        index = int(label.row_index or 0)
        if index >= rows:
            raise ValueError(f"row {index} is not in the dataset (rows 0 to {rows - 1})")
        return index
    shown = str(label.row_id) if field == "row_id" else str(label.query)
    found = (by_id if field == "row_id" else by_query).get(shown, [])
    if not found:
        raise ValueError(f"no row of the dataset has {field} {clip(shown)!r}")
    if len(found) > 1 and label.row_index in found:  # an export's index picks among them
        return int(label.row_index)
    if len(found) > 1:
        many = ", ".join(str(p) for p in found[:5])
        raise ValueError(f"{len(found)} rows have {field} {clip(shown)!r} (rows {many})")
    return found[0]


def _naming_field(label: LabelIn) -> str:
    if label.row_id is not None:
        return "row_id"
    return "query" if label.query is not None else "row_index"


def resolve_labels(
    runs: RunStore,
    dataset_id: int,
    labels: Sequence[LabelIn],
    *,
    reviewer: str,
    source: str,
    lines: Sequence[int] | None = None,
) -> list[NewLabel]:
    """``labels`` as labels of rows of dataset version ``dataset_id`` (a label without a
    reviewer is ``reviewer``'s), each checked; DatasetError naming ``source``, the label's
    line (``lines``, else its number in ``labels``) and the field of the first bad one."""
    by_id, by_query, rows = _index(runs, dataset_id, labels)
    out: list[NewLabel] = []
    for number, label in enumerate(labels, start=1):
        line = lines[number - 1] if lines is not None else None
        where = source if line is not None else f"{source}: label {number}"
        try:
            position = _position(label, by_id, by_query, rows)
        except ValueError as exc:
            field = _naming_field(label)
            raise DatasetError(str(exc), source=where, line=line, field=field) from None
        made = NewLabel(
            position, label.metric, label.reviewer or reviewer, label.value, label.comment
        )
        try:
            check_label(made, rows)
        except ConfigError as exc:
            raise DatasetError(str(exc), source=where, line=line, row=position) from None
        out.append(made)
    return out


def label_rows(runs: RunStore, dataset_id: int, labels: Sequence[Label]) -> list[dict[str, Any]]:
    """``labels`` as export lines: the row's ``row_id`` when it has an id, else its
    ``query``, with ``row_index``, ``metric``, ``reviewer``, ``value``, ``comment``,
    ``created_at`` (and ``run_id``, ``updated_at``)."""
    wanted = {lb.position for lb in labels}
    keys: dict[int, tuple[Any, Any]] = {}
    if wanted:
        last = max(wanted)
        for position, row in enumerate(runs.iter_dataset_rows(dataset_id)):
            if position > last:
                break
            if position in wanted:
                row_id = row.get("id")
                keys[position] = (row_id, None if row_id is not None else row.get("query"))
    out = []
    for label in labels:
        row_id, query = keys.get(label.position, (None, None))
        stored = label.as_dict()
        out.append(
            {
                "row_id": row_id,
                "query": query,
                "row_index": label.position,
                "metric": label.metric,
                "reviewer": label.reviewer,
                "value": label.value,
                "comment": label.comment,
                "created_at": stored["created_at"],
                "run_id": label.run_id,
                "updated_at": stored["updated_at"],
            }
        )
    return out
