"""The xlsx downloads of DB-GPT's evaluation page: workbooks (``service.workbooks``) built
on a pool of processes of their own (``[server] max_exports`` at once, more are a 429), so
a download never holds the threads or the interpreter lock every other route shares, then
sent from their temporary file and removed."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from urllib.parse import quote

from starlette.background import BackgroundTask
from starlette.responses import FileResponse

from ragmeter.errors import LimitError
from ragmeter.service.workbooks import watch_server

__all__ = ["EXPORTS", "XLSX_TYPE", "Exports", "content_disposition", "xlsx_response"]

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def xlsx_response(path: str, filename: str) -> FileResponse:
    """The workbook at ``path`` as a download named ``filename``, sent from the file in
    chunks and removed once sent."""
    headers = {"content-disposition": content_disposition(filename)}
    return FileResponse(
        path, media_type=XLSX_TYPE, headers=headers, background=BackgroundTask(os.unlink, path)
    )


class Exports:
    """Workbooks built at once, each in a process of a pool of its own (started on the first
    download, its processes kept for the next): at most ``limit``; one more is a 429 naming
    ``[server] max_exports``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy = 0
        self._pool: ProcessPoolExecutor | None = None

    def _enter(self, limit: int) -> ProcessPoolExecutor:
        with self._lock:
            if self._busy >= limit:
                raise LimitError(
                    f"{limit} xlsx downloads are being built; try again when one is done",
                    setting="[server] max_exports",
                    status=429,
                )
            self._busy += 1
            if self._pool is None:
                # spawned, not forked: a fork of a server with threads may copy a held lock
                spawn = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(
                    limit, mp_context=spawn, initializer=watch_server, initargs=(os.getpid(),)
                )
            return self._pool

    def _leave(self) -> None:
        with self._lock:
            self._busy -= 1

    async def build(self, limit: int, make: Callable[..., str], *args: object) -> str:
        """``make(*args)`` (a workbook's path; a function of ``service.workbooks``, with
        arguments a process can receive) on the pool, its slot held until it returns; a
        path left by a cancelled request is removed."""
        pool = self._enter(limit)
        try:
            future = asyncio.get_running_loop().run_in_executor(pool, make, *args)
        except BaseException:
            self._leave()
            raise
        future.add_done_callback(lambda _done: self._leave())
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(_remove_made)
            raise

    def close(self) -> None:
        """Stops the pool's processes (when the server stops); a workbook being built is
        abandoned."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


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
