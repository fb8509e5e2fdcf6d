"""One run's results of one metric as columns (pairing key, row index, score) in row order
(``result_columns``) for comparisons; a finished run's columns kept for the next request, as
the compare view asks for statistics, pairs and scatter of the same two runs at once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from ragmeter.runs.storage.result_columns import score_column
from ragmeter.runs.views.compare import Pairing, Side
from ragmeter.store.models import RunRecord

__all__ = ["KEPT_RESULTS", "read_side"]

#: results (of finished runs) whose columns stay in memory, ~24 bytes each
KEPT_RESULTS = 2_000_000
#: one read at a time: the driver hands the GIL back and forth for every row it reads, so
#: two reads side by side (the compare view's pairs and scatter at once) took 3x as long
#: as one after the other; a read that waited finds the columns the other one kept
_READING = threading.Lock()
_kept: OrderedDict[tuple[Any, ...], tuple[Side, np.ndarray[Any, Any]]] = OrderedDict()


def _version(session: Session, run_id: str) -> tuple[Any, ...] | None:
    """What identifies a finished run's results (None while it runs, or for no such run):
    it is made, started and finished again when resumed, so a stamp changes with them."""
    run = session.get(RunRecord, run_id)
    if run is None or run.state in ("pending", "running"):
        return None
    return (run.created_at, run.started_at, run.finished_at, run.done_rows)


def _columns(session: Session, run_id: str, metric: str, by: Pairing) -> tuple[Side, Any]:
    found = score_column(session, run_id, metric, keys=by)
    assert found.keys is not None  # asked for
    columns = found.keys, found.scores, found.rows  # in row order, as compare_scores reads
    for column in columns:
        column.flags.writeable = False  # kept and shared: no caller may change them
    return Side(columns[0], columns[1]), columns[2]


def read_side(session: Session, run_id: str, metric: str, by: Pairing) -> tuple[Side, Any]:
    """A run's results of ``metric`` as columns in row order, and their row indexes."""
    with _READING:
        version = _version(session, run_id)
        key = (str(session.get_bind().engine.url), run_id, metric, by, version)
        if version is not None and key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
        found = _columns(session, run_id, metric, by)
        if version is not None and len(found[1]) <= KEPT_RESULTS:
            _kept[key] = found
            while sum(len(rows) for _, rows in _kept.values()) > KEPT_RESULTS:
                _kept.popitem(last=False)
        return found
