"""The xlsx workbooks of DB-GPT's evaluation page (a run's results, a dataset's rows),
built from the store in a process of their own: openpyxl is pure Python, and a workbook of
100,000 lines built on a thread of the server held the interpreter's lock away from every
other route (issue 26 F4). Write-only: one line in memory at a time, written to a temporary
file whose path is returned (the caller sends and removes it)."""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell

from ragmeter.errors import LimitError
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import open_store

__all__ = [
    "MAX_COLUMNS",
    "cell_value",
    "dataset_workbook",
    "results_workbook",
    "watch_server",
    "write_xlsx",
]

#: seconds between two looks at whether the server that started this process still runs
_WATCH_S = 1.0


def watch_server(server_pid: int) -> None:
    """Ends this process once the server that started it is gone (stopped, or killed before
    it could stop its pool): a workbook's process never outlives its server."""

    def watch() -> None:
        while os.getppid() == server_pid:
            time.sleep(_WATCH_S)
        os._exit(0)

    threading.Thread(target=watch, name="ragmeter-server-watch", daemon=True).start()


#: a cell holds at most this many characters (Excel's own limit)
MAX_CELL_CHARS = 32_767
#: columns of one sheet (Excel's own limit; openpyxl refuses more)
MAX_COLUMNS = 16_384
#: characters XML 1.0 cannot carry; openpyxl refuses them
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def cell_value(value: Any) -> Any:
    """A value a cell can hold: numbers and booleans as they are, anything else as text
    (lists and objects as JSON), cut to Excel's limit and without XML-illegal characters.
    Text that starts like a formula is kept as text (a leading quote), never evaluated."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = _ILLEGAL.sub("", text)[:MAX_CELL_CHARS]
    if text[:1] in ("=", "+", "-", "@"):
        text = "'" + text[: MAX_CELL_CHARS - 1]
    return text


def write_xlsx(title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """One sheet named ``title``: ``header`` in bold, then ``rows``, written to a temporary
    file whose path is returned (the caller removes it). A header wider than an xlsx sheet
    is a 413 naming the limit."""
    if len(header) > MAX_COLUMNS:
        raise LimitError(
            f"{len(header):,} fields do not fit an xlsx sheet, which holds at most "
            f"{MAX_COLUMNS:,} columns; read the rows as JSON instead",
            setting="[server] max_dataset_fields",
            status=413,
        )
    book = Workbook(write_only=True)
    sheet = book.create_sheet(title=re.sub(r"[\[\]:*?/\\]", "_", title)[:31] or "Sheet")
    bold = []
    for name in header:
        cell = WriteOnlyCell(sheet, value=cell_value(name))
        cell.font = cell.font.copy(bold=True)
        bold.append(cell)
    sheet.append(bold)
    for row in rows:
        sheet.append([cell_value(v) for v in row])
    handle, path = tempfile.mkstemp(prefix="ragmeter-", suffix=".xlsx")
    os.close(handle)
    try:
        book.save(path)
    except BaseException:
        os.unlink(path)
        raise
    return path


RESULT_COLUMNS = ["row", "query", "metric", "score", "passing", "feedback", "error"]
RESULT_TAIL = ["answer", "contexts", "reference"]


def results_workbook(store_url: str, run_id: str) -> str:
    """Every result of run ``run_id`` in the store at ``store_url``, one line per row and
    metric, read a hundred rows at a time."""
    found = RunStore(open_store(store_url)).iter_results(run_id)
    rows = (
        [
            r.row_index,
            r.query,
            r.metric_name,
            r.score,
            r.passing,
            r.feedback,
            r.error,
            r.prediction,
            r.contexts,
            (r.raw_dataset or {}).get("reference"),
        ]
        for r in found
    )
    return write_xlsx("results", RESULT_COLUMNS + RESULT_TAIL, rows)


def dataset_workbook(store_url: str, dataset_id: int, title: str) -> str:
    """The rows of dataset ``dataset_id``, one column per field (the fields of every row, in
    the order first seen)."""
    runs = RunStore(open_store(store_url))
    columns: dict[str, None] = {}
    for row in runs.iter_dataset_rows(dataset_id):
        columns.update(dict.fromkeys(row))
    header = list(columns)
    rows = ([row.get(c) for c in header] for row in runs.iter_dataset_rows(dataset_id))
    return write_xlsx(title, header, rows)
