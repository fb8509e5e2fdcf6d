"""Whether an HTTP endpoint answers at all: one ``GET`` over asyncio's own streams, so the
check costs no HTTP library import (httpx takes ~0.1-0.2 s of CPU, on the path to a run's
first judge request, while it loads on a thread for the judge's own requests)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import ssl

__all__ = ["answers_http"]


async def answers_http(url: str, headers: dict[str, str], within: float) -> bool:
    """True when ``url`` answers a ``GET`` with any HTTP status line within ``within``
    seconds; False on a bad URL, no connection, a timeout or a reply that is not HTTP."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    secure = parts.scheme == "https"
    try:
        port = parts.port or (443 if secure else 80)
    except ValueError:  # a port out of range
        return False
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"GET {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
    fields = [f"{name}: {value}" for name, value in headers.items()]
    if any("\r" in field or "\n" in field for field in fields):
        return False  # a value that would end the header early: not sent
    lines += fields
    request = ("\r\n".join([*lines, "Connection: close", "", ""])).encode("latin-1", "replace")
    try:
        async with asyncio.timeout(within):
            reader, writer = await asyncio.open_connection(
                parts.hostname, port, ssl=_tls() if secure else None
            )
            try:
                writer.write(request)
                await writer.drain()
                status = await reader.readline()
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except (OSError, TimeoutError, ValueError, UnicodeError):
        return False
    return status.startswith(b"HTTP/")


def _tls() -> ssl.SSLContext:
    import ssl

    return ssl.create_default_context()
