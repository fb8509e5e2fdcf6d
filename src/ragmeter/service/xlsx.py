"""Rows as an xlsx workbook (openpyxl, write-only: one row in memory at a time) written to a
temporary file and sent from it, for the downloads of DB-GPT's evaluation page. Workbooks
are built on a pool of their own (``[server] max_exports`` at once, more are a 429), so a
download never holds the threads every other route shares."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from starlette.background import BackgroundTask
from starlette.responses import FileResponse

from ragmeter.errors import LimitError

__all__ = [
    "EXPORTS",
    "MAX_COLUMNS",
    "XLSX_TYPE",
    "Exports",
    "cell_value",
    "content_disposition",
    "write_xlsx",
    "xlsx_response",
]

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
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


def xlsx_response(path: str, filename: str) -> FileResponse:
    """The workbook at ``path`` as a download named ``filename``, sent from the file in
    chunks and removed once sent."""
    headers = {"content-disposition": content_disposition(filename)}
    return FileResponse(
        path, media_type=XLSX_TYPE, headers=headers, background=BackgroundTask(os.unlink, path)
    )


class Exports:
    """Workbooks built at once, on threads of their own: at most ``limit``; one more is a
    429 naming ``[server] max_exports``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy = 0
        self._pool: ThreadPoolExecutor | None = None

    def _enter(self, limit: int) -> ThreadPoolExecutor:
        with self._lock:
            if self._busy >= limit:
                raise LimitError(
                    f"{limit} xlsx downloads are being built; try again when one is done",
                    setting="[server] max_exports",
                    status=429,
                )
            self._busy += 1
            if self._pool is None:
                self._pool = ThreadPoolExecutor(limit, thread_name_prefix="ragmeter-xlsx")
            return self._pool

    def _leave(self) -> None:
        with self._lock:
            self._busy -= 1

    async def build(self, limit: int, make: Callable[[], str]) -> str:
        """``make()`` (a workbook's path) on the pool, its slot held until it returns; a
        path left by a cancelled request is removed."""
        pool = self._enter(limit)
        try:
            future = asyncio.get_running_loop().run_in_executor(pool, make)
        except BaseException:
            self._leave()
            raise
        future.add_done_callback(lambda _done: self._leave())
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(_remove_made)
            raise


def _remove_made(future: asyncio.Future[str]) -> None:
    if not future.cancelled() and future.exception() is None:
        with contextlib.suppress(OSError):
            os.unlink(future.result())


#: the server's downloads (one server per process)
EXPORTS = Exports()


def content_disposition(filename: str) -> str:
    """``attachment`` naming ``filename``: percent-encoded in ``filename`` (DB-GPT's page
    decodes it with decodeURIComponent) and in ``filename*`` (RFC 6266) for everyone else."""
    quoted = quote(filename, safe="")
    return f"attachment; filename=\"{quoted}\"; filename*=UTF-8''{quoted}"
