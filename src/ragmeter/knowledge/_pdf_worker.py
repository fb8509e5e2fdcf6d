"""Reads one PDF's text in a process of its own, under limits on memory and CPU time.

Run as ``python -I _pdf_worker.py MAX_CHARS MEMORY_MB CPU_SECONDS`` with the PDF's bytes on
stdin (``MAX_CHARS`` -1: no cap). It prints one JSON object, ``{"text": ...}`` or
``{"error": KIND, "detail": ...}`` with KIND one of ``encrypted``, ``too_long``, ``memory``,
``pypdf_limit``, ``unreadable``. It imports only the standard library and pypdf (never
ragmeter, which is heavy), and sets its limits before pypdf is imported, so a hostile PDF
meets them wherever it strikes; past its CPU limit the kernel ends it.
"""

from __future__ import annotations

import io
import json
import math
import resource
import sys
from typing import Any


def _limit(memory_mb: int, cpu_seconds: float) -> None:
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = max(1, math.ceil(cpu_seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would dump core


def _pages(data: bytes, max_chars: int) -> dict[str, Any]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        return {"error": "encrypted"}
    texts: list[str] = []
    total = 0
    for page in reader.pages:
        text = (page.extract_text() or "").strip()
        if not text:
            continue
        texts.append(text.encode("utf-8", "replace").decode("utf-8"))  # no lone surrogates
        total += len(text) + 2
        if 0 <= max_chars < total:
            return {"error": "too_long", "detail": str(total)}
    return {"text": "\n\n".join(texts)}


def _read(data: bytes, max_chars: int) -> dict[str, Any]:
    from pypdf.errors import LimitReachedError

    try:
        return _pages(data, max_chars)
    except MemoryError:
        return {"error": "memory"}
    except LimitReachedError as exc:
        return {"error": "pypdf_limit", "detail": str(exc)[:300]}
    except RecursionError:
        return {"error": "unreadable", "detail": "objects nested too deeply"}
    except Exception as exc:  # pypdf raises many kinds for a malformed file
        return {"error": "unreadable", "detail": f"{type(exc).__name__}: {exc}"[:300]}


def main() -> None:
    max_chars, memory_mb, cpu_seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    data = sys.stdin.buffer.read()
    _limit(memory_mb, cpu_seconds)
    try:
        result = _read(data, max_chars)
    except MemoryError:  # importing pypdf itself did not fit
        result = {"error": "memory"}
    del data
    sys.stdout.buffer.write(json.dumps(result, ensure_ascii=False).encode("utf-8"))


if __name__ == "__main__":
    main()
