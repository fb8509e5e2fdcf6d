"""Reading documents into text: markdown and plain text as they are; HTML as light markdown
(headers kept, so header chunking works) and PDF page by page, both in a subprocess with
memory and CPU limits (a small PDF can decompress into gigabytes or hours of work, and
CPython's HTML parser is quadratic in some pages)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.errors import LimitError, RagmeterError

if TYPE_CHECKING:
    from ragmeter.config import ServerConfig

__all__ = [
    "DOCUMENT_KINDS",
    "DocumentLimits",
    "DocumentReadError",
    "ReadingBudget",
    "document_kind",
    "read_document",
]

#: file suffix -> document kind
DOCUMENT_KINDS: dict[str, str] = {
    ".md": "md",
    ".markdown": "md",
    ".mdx": "md",
    ".txt": "txt",
    ".text": "txt",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}


#: an upload's PDF and HTML documents may take this many times ``pdf_seconds`` of CPU in all
UPLOAD_READ_FACTOR = 5


class DocumentReadError(RagmeterError):
    """A document could not be read; the message names the file."""


@dataclass(frozen=True, slots=True)
class DocumentLimits:
    """What reading and chunking documents may cost; None is no cap. The CLI keeps the
    defaults (no caps; generous limits for the PDF reader); the service builds them from
    ``[server]``, whose settings its messages then name. Fields are named as those settings."""

    #: characters extracted from one document
    max_document_chars: int | None = None
    #: chunks cut from one document
    max_document_chunks: int | None = None
    #: chunks added by one call
    max_upload_chunks: int | None = None
    #: memory (address space) and CPU seconds of the subprocess that reads one PDF or HTML
    pdf_memory_mb: int = 4096
    pdf_seconds: float = 600.0
    #: CPU seconds of those subprocesses for all documents of one call (an upload)
    max_upload_read_seconds: float | None = None
    #: how messages name the settings (``[server]``); empty for the library's own limits
    section: str = ""
    #: set when the work must stop (a server shutting down): a PDF being read is killed
    stop: threading.Event | None = None

    @classmethod
    def from_server(cls, server: ServerConfig) -> DocumentLimits:
        return cls(
            max_document_chars=server.max_document_chars,
            max_document_chunks=server.max_document_chunks,
            max_upload_chunks=server.max_upload_chunks,
            pdf_memory_mb=server.pdf_memory_mb,
            pdf_seconds=server.pdf_seconds,
            max_upload_read_seconds=UPLOAD_READ_FACTOR * server.pdf_seconds,
            section="[server]",
        )

    def setting(self, name: str) -> str:
        return f"{self.section} {name}" if self.section else f"limit {name}"


def document_kind(path: Path) -> str | None:
    """The kind of document a path holds by its suffix, or None if unsupported."""
    return DOCUMENT_KINDS.get(path.suffix.lower())


def _decode(data: bytes, name: str) -> str:
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise DocumentReadError(f"{name}: not UTF-8 (or GB18030) text")


_WORKER = Path(__file__).with_name("_document_worker.py")
#: seconds of wall-clock time a worker gets beyond its CPU limit (start-up, a busy machine)
_WORKER_GRACE = 10.0
#: how messages call a document the worker reads, by kind
_KIND_LABEL = {"pdf": "the PDF", "html": "the HTML page"}


class ReadingBudget:
    """CPU seconds the document worker may still spend on one call's documents (an upload
    of many PDFs must not take hours); None left: no cap."""

    def __init__(self, limits: DocumentLimits) -> None:
        self.limits = limits
        self.total = limits.max_upload_read_seconds
        self.left = self.total

    def grant(self, name: str) -> float:
        """CPU seconds the next document may use: its own limit, or what is left if less."""
        if self.left is None:
            return self.limits.pdf_seconds
        if self.left <= 0:
            raise self.exceeded(name)
        return min(self.limits.pdf_seconds, self.left)

    def spend(self, seconds: float) -> None:
        if self.left is not None:
            self.left -= seconds

    def exceeded(self, name: str) -> LimitError:
        return LimitError(
            f"{name}: not read; reading this upload's PDF and HTML documents took more than "
            f"{self.total:g} s of CPU ({(self.total or 0) / self.limits.pdf_seconds:g} "
            "times pdf_seconds)",
            setting=self.limits.setting("pdf_seconds"),
            status=413,
        )


def _run_worker(kind: str, data: bytes, limits: DocumentLimits, cpu: float) -> dict[str, Any]:
    """The worker's answer, or a ``{"error": ...}`` made from how it ended."""
    cap = -1 if limits.max_document_chars is None else limits.max_document_chars
    args = [sys.executable, "-I", str(_WORKER), kind, str(cap), str(limits.pdf_memory_mb)]
    args.append(repr(float(cpu)))
    try:
        worker = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={},  # a parser of hostile input needs none of the server's secrets
        )
    except OSError as exc:
        return {"error": "start", "detail": exc.strerror or str(exc)}
    with worker:  # its pipes closed whatever happens (a killed worker's stdin included)
        ended = _wait(worker, data, 2 * cpu + _WORKER_GRACE, limits.stop)
    if ended is None:
        return {"error": "stopped" if limits.stop is not None and limits.stop.is_set() else "time"}
    out, err = ended
    try:
        answer: dict[str, Any] = json.loads(out)
        return answer
    except ValueError:
        pass
    if worker.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"error": "time"}
    if b"MemoryError" in err:
        return {"error": "memory"}
    code = worker.returncode
    how = f"signal {-code}" if code < 0 else f"exit code {code}"
    return {"error": "crash", "detail": how}


def _wait(
    worker: subprocess.Popen[bytes], data: bytes, seconds: float, stop: threading.Event | None
) -> tuple[bytes, bytes] | None:
    """The worker's output once it ends; None (it is killed) past ``seconds`` or ``stop``."""
    deadline = time.monotonic() + seconds
    given: bytes | None = data
    while True:
        try:
            return worker.communicate(input=given, timeout=0.25)
        except subprocess.TimeoutExpired:
            given = None  # sent already; communicate keeps what it read so far
        if time.monotonic() > deadline or (stop is not None and stop.is_set()):
            worker.kill()
            worker.communicate()
            return None


def _worker_text(
    kind: str, data: bytes, name: str, limits: DocumentLimits, budget: ReadingBudget | None
) -> str:
    """The text the worker read from a PDF's bytes or an HTML page's UTF-8."""
    cpu = budget.grant(name) if budget is not None else limits.pdf_seconds
    answer = _run_worker(kind, data, limits, cpu)
    if budget is not None:
        spent = answer.get("cpu")
        budget.spend(float(spent) if isinstance(spent, (int, float)) else cpu)
    error, detail = answer.get("error"), answer.get("detail")
    if error is None:
        return str(answer.get("text", ""))
    if error == "time" and budget is not None and cpu < limits.pdf_seconds:
        raise budget.exceeded(name)
    label = _KIND_LABEL[kind]
    if error == "too_long":
        raise LimitError(
            f"{name}: {label} holds more than {limits.max_document_chars} characters of text",
            setting=limits.setting("max_document_chars"),
            status=413,
        )
    reasons = {
        "encrypted": f"{label} is encrypted",
        "time": f"reading {label} took more than {limits.pdf_seconds:g} s "
        f"({limits.setting('pdf_seconds')})",
        "memory": f"reading {label} needs more than {limits.pdf_memory_mb} MB of memory "
        f"({limits.setting('pdf_memory_mb')})",
        "pypdf_limit": f"the PDF is over pypdf's safety limits: {detail}",
        "crash": f"the document reader crashed ({detail})",
        "start": f"cannot start the document reader: {detail}",
        "stopped": "not read: the server is stopping",
    }
    why = reasons.get(str(error), f"cannot read {label}: {detail}")
    raise DocumentReadError(f"{name}: {why}")


def _pdf_text(data: bytes, name: str, limits: DocumentLimits, budget: ReadingBudget | None) -> str:
    text = _worker_text("pdf", data, name, limits, budget)
    if not text:
        raise DocumentReadError(f"{name}: the PDF has no extractable text (a scan?)")
    return text


def _check_length(text: str, name: str, limits: DocumentLimits) -> str:
    cap = limits.max_document_chars
    if cap is not None and len(text) > cap:
        raise LimitError(
            f"{name}: the document holds {len(text)} characters of text, more than {cap}",
            setting=limits.setting("max_document_chars"),
            status=413,
        )
    return text


def read_document(
    path: Path,
    data: bytes | None = None,
    *,
    limits: DocumentLimits | None = None,
    name: str | None = None,
    budget: ReadingBudget | None = None,
) -> str:
    """The text of a supported document; ``data`` is its bytes if already read, ``name``
    how messages call it (default: the path). A PDF or HTML page is read by a subprocess
    under ``limits`` (and ``budget``, shared by one call's documents); text over
    ``limits.max_document_chars`` is a ``LimitError``."""
    limits = limits or DocumentLimits()
    name = name or str(path)
    kind = document_kind(path)
    if kind is None:
        known = ", ".join(sorted(DOCUMENT_KINDS))
        raise DocumentReadError(f"{name}: unsupported file type; supported: {known}")
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DocumentReadError(f"{name}: {exc.strerror or exc}") from exc
    if kind == "pdf":
        return _pdf_text(data, name, limits, budget)
    text = _decode(data, name)
    if kind == "html":
        return _worker_text("html", text.encode("utf-8"), name, limits, budget)
    return _check_length(text, name, limits)
