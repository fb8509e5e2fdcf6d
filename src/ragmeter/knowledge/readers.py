"""Reading documents into text: markdown and plain text as they are, HTML as light markdown
(headers kept, so header chunking works), PDF page by page in a subprocess with memory and
CPU limits (a small PDF can decompress into gigabytes or hours of work)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.errors import LimitError, RagmeterError

if TYPE_CHECKING:
    from ragmeter.config import ServerConfig

__all__ = [
    "DOCUMENT_KINDS",
    "DocumentLimits",
    "DocumentReadError",
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
    #: memory (address space) and CPU seconds of the subprocess that reads one PDF
    pdf_memory_mb: int = 4096
    pdf_seconds: float = 600.0
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


_BLOCK = frozenset(
    {"p", "div", "section", "article", "br", "tr", "table", "ul", "ol", "blockquote", "hr"}
)
_SKIP = frozenset({"script", "style", "head", "noscript", "template", "svg"})
_HEADER_TAG = re.compile(r"^h([1-6])$")


class _HtmlToText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif (header := _HEADER_TAG.match(tag)) is not None:
            self.parts.append("\n\n" + "#" * int(header.group(1)) + " ")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag == "pre":
            self.pre += 1
            self.parts.append("\n\n```\n")
        elif tag in _BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif _HEADER_TAG.match(tag):
            self.parts.append("\n\n")
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.parts.append("\n```\n\n")
        elif tag in _BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self) -> str:
        lines: list[str] = []
        in_code = False
        for line in "".join(self.parts).split("\n"):
            if line.strip() == "```":
                in_code = not in_code
                lines.append("```")
            else:
                lines.append(line.rstrip() if in_code else line.strip())
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _html_text(data: bytes, name: str) -> str:
    parser = _HtmlToText()
    parser.feed(_decode(data, name))
    parser.close()
    return parser.text()


_PDF_WORKER = Path(__file__).with_name("_pdf_worker.py")
#: seconds of wall-clock time a PDF worker gets beyond its CPU limit (start-up, a busy machine)
_PDF_GRACE = 10.0


def _run_pdf_worker(data: bytes, name: str, limits: DocumentLimits) -> dict[str, Any]:
    """The worker's answer, or a ``{"error": ...}`` made from how it ended."""
    cap = -1 if limits.max_document_chars is None else limits.max_document_chars
    args = [sys.executable, "-I", str(_PDF_WORKER), str(cap), str(limits.pdf_memory_mb)]
    args.append(repr(float(limits.pdf_seconds)))
    try:
        worker = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={},  # a parser of hostile input needs none of the server's secrets
        )
    except OSError as exc:
        raise DocumentReadError(f"{name}: cannot start the PDF reader: {exc.strerror}") from exc
    ended = _wait(worker, data, 2 * limits.pdf_seconds + _PDF_GRACE, limits.stop)
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


def _pdf_text(data: bytes, name: str, limits: DocumentLimits) -> str:
    answer = _run_pdf_worker(data, name, limits)
    error, detail = answer.get("error"), answer.get("detail")
    if error is None:
        text = str(answer.get("text", ""))
        if not text:
            raise DocumentReadError(f"{name}: the PDF has no extractable text (a scan?)")
        return text
    if error == "too_long":
        raise LimitError(
            f"{name}: the PDF holds more than {limits.max_document_chars} characters of text",
            setting=limits.setting("max_document_chars"),
            status=413,
        )
    reasons = {
        "encrypted": "the PDF is encrypted",
        "time": f"reading the PDF took more than {limits.pdf_seconds:g} s "
        f"({limits.setting('pdf_seconds')})",
        "memory": f"reading the PDF needs more than {limits.pdf_memory_mb} MB of memory "
        f"({limits.setting('pdf_memory_mb')})",
        "pypdf_limit": f"the PDF is over pypdf's safety limits: {detail}",
        "crash": f"the PDF reader crashed ({detail})",
        "stopped": "not read: the server is stopping",
    }
    raise DocumentReadError(f"{name}: {reasons.get(str(error), f'cannot read the PDF: {detail}')}")


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
) -> str:
    """The text of a supported document; ``data`` is its bytes if already read, ``name``
    how messages call it (default: the path). A PDF is read by a subprocess under
    ``limits``; text over ``limits.max_document_chars`` is a ``LimitError``."""
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
        return _pdf_text(data, name, limits)
    if kind == "html":
        return _check_length(_html_text(data, name), name, limits)
    return _check_length(_decode(data, name), name, limits)
