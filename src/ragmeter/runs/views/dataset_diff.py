"""How two versions of a dataset differ, row by row: rows pair by their ``id`` when every row
of both has one (a stable id survives edits), else by query text (the n-th occurrence of a
text with the n-th), as comparisons pair results; a paired row whose test case changed counts
as changed. What a target or app produces (a row's response, retrieved items, conversation) is
the subject of a comparison, not a change of its test case, so it is left out of the diff."""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from typing import Any

from ragmeter.datasets.digest import row_digest
from ragmeter.runs.storage.dataset_store import DatasetStore
from ragmeter.store.bulk import collector_paused
from ragmeter.store.pairing import is_row_id
from ragmeter.wire.lineage import DatasetDiff

__all__ = ["KEPT_DIFFS", "PREDICTIONS", "dataset_diff"]

#: a row's fields that hold what was evaluated rather than the test case
PREDICTIONS = frozenset({"response", "retrieved_contexts", "retrieved_ids", "messages"})
#: diffs kept for the next request: the compare view asks for one on each load, and a diff
#: reads every row of both versions (about 2 s for 100,000 rows each)
KEPT_DIFFS = 64
#: guards the kept diffs and the locks of the ones being made (held briefly)
_GUARD = threading.Lock()
_kept: OrderedDict[tuple[Any, ...], DatasetDiff] = OrderedDict()
#: one lock per diff being made: a request for the same diff waits and finds it kept, one
#: for another diff goes on
_making: dict[tuple[Any, ...], threading.Lock] = {}


#: a row as a diff reads it: its id, its query and the digest of its test case
_Case = tuple[Any, str, bytes]


def _cases(rows: Iterable[dict[str, Any]]) -> list[_Case]:
    return [
        (
            row.get("id"),
            str(row.get("query", "")),
            row_digest({k: v for k, v in row.items() if k not in PREDICTIONS}),
        )
        for row in rows
    ]


def _keyed(cases: list[_Case], by_id: bool) -> dict[tuple[str, int], bytes]:
    seen: Counter[str] = Counter()
    out: dict[tuple[str, int], bytes] = {}
    for found, query, digest in cases:
        key = str(found) if by_id else query
        out[(key, seen[key])] = digest
        seen[key] += 1
    return out


def _stamp(datasets: DatasetStore, dataset_id: int) -> tuple[Any, ...]:
    """What identifies a dataset version's rows: its id, when it was made, how many rows it
    holds (a test set grows) and their hash."""
    record = datasets.dataset(dataset_id)
    return (record.id, record.created_at, record.row_count, record.content_hash)


def dataset_diff(datasets: DatasetStore, a: int, b: int) -> DatasetDiff:
    """Rows added (in ``b`` only), removed (in ``a`` only), changed and unchanged from
    dataset version ``a`` to ``b`` (ids); both read in batches, the diff kept for the next
    request."""
    key = (str(datasets.store.engine.url), _stamp(datasets, a), _stamp(datasets, b))
    with _GUARD:
        making = _making.setdefault(key, threading.Lock())
    with making:
        try:
            with _GUARD:
                found = _kept.get(key)
            if found is None:
                found = _diff(datasets, a, b)
            with _GUARD:
                _kept[key] = found
                _kept.move_to_end(key)
                while len(_kept) > KEPT_DIFFS:
                    _kept.popitem(last=False)
        finally:  # a diff that failed leaves no lock behind
            with _GUARD:
                _making.pop(key, None)
    return found.model_copy()


def _diff(datasets: DatasetStore, a: int, b: int) -> DatasetDiff:
    with collector_paused():  # dicts by the hundred thousand, in no cycle
        return _counted(datasets, a, b)


def _counted(datasets: DatasetStore, a: int, b: int) -> DatasetDiff:
    cases_a = _cases(datasets.iter_dataset_rows(a))  # each row read, kept as its case only
    cases_b = _cases(datasets.iter_dataset_rows(b))
    by_id = all(is_row_id(case[0]) for case in (*cases_a, *cases_b))
    keyed_a, keyed_b = _keyed(cases_a, by_id), _keyed(cases_b, by_id)
    both = keyed_a.keys() & keyed_b.keys()
    changed = sum(1 for key in both if keyed_a[key] != keyed_b[key])
    return DatasetDiff(
        paired_by="id" if by_id else "query",
        added=len(keyed_b.keys() - keyed_a.keys()),
        removed=len(keyed_a.keys() - keyed_b.keys()),
        changed=changed,
        unchanged=len(both) - changed,
    )
