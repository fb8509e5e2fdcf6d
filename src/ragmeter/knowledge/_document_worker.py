"""Reads one PDF or HTML document's text in a process of its own, under limits on memory and
CPU time.

Run as ``python -I _document_worker.py KIND MAX_CHARS MEMORY_MB CPU_SECONDS`` with KIND
``pdf`` (the PDF's bytes on stdin) or ``html`` (the page as UTF-8 on stdin; ``MAX_CHARS`` -1:
no cap). It prints one JSON object, ``{"text": ..., "cpu": SECONDS}`` or ``{"error": ERROR,
"detail": ..., "cpu": SECONDS}`` with ERROR one of ``encrypted``, ``too_long``, ``memory``,
``pypdf_limit``, ``unreadable``. It imports only the standard library, pypdf and the
stdlib-only ``_html.py`` beside it (loaded by path: never ragmeter, which is heavy), and sets
its limits before either is loaded, so a hostile document meets them wherever it strikes;
past its CPU limit the kernel ends it.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import resource
import sys
from pathlib import Path
from typing import Any


def _limit(memory_mb: int, cpu_seconds: float) -> None:
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = max(1, math.ceil(cpu_seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would dump core


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


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


def _read_pdf(data: bytes, max_chars: int) -> dict[str, Any]:
    from pypdf.errors import LimitReachedError

    try:
        return _pages(data, max_chars)
    except LimitReachedError as exc:
        return {"error": "pypdf_limit", "detail": str(exc)[:300]}
    except RecursionError:
        return {"error": "unreadable", "detail": "objects nested too deeply"}
    except MemoryError:
        raise
    except Exception as exc:  # pypdf raises many kinds for a malformed file
        return {"error": "unreadable", "detail": f"{type(exc).__name__}: {exc}"[:300]}


def _read_html(data: bytes, max_chars: int) -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location(
        "_ragmeter_html", Path(__file__).with_name("_html.py")
    )
    if spec is None or spec.loader is None:
        return {"error": "unreadable", "detail": "the HTML reader is missing"}
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.html_to_markdown(data.decode("utf-8"))
    if 0 <= max_chars < len(text):
        return {"error": "too_long", "detail": str(len(text))}
    return {"text": text}


def _read(kind: str, data: bytes, max_chars: int) -> dict[str, Any]:
    try:
        return _read_pdf(data, max_chars) if kind == "pdf" else _read_html(data, max_chars)
    except MemoryError:  # the document, or importing its reader, did not fit
        return {"error": "memory"}


def main() -> None:
    kind, max_chars = sys.argv[1], int(sys.argv[2])
    memory_mb, cpu_seconds = int(sys.argv[3]), float(sys.argv[4])
    data = sys.stdin.buffer.read()
    _limit(memory_mb, cpu_seconds)
    result = _read(kind, data, max_chars)
    del data
    result["cpu"] = _cpu()
    sys.stdout.buffer.write(json.dumps(result, ensure_ascii=False).encode("utf-8"))


if __name__ == "__main__":
    main()
