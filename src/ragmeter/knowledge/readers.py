"""Reading documents into text: markdown and plain text as they are, HTML as light markdown
(headers kept, so header chunking works), PDF page by page."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from ragmeter.errors import RagmeterError

__all__ = ["DOCUMENT_KINDS", "DocumentReadError", "document_kind", "read_document"]

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


def document_kind(path: Path) -> str | None:
    """The kind of document a path holds by its suffix, or None if unsupported."""
    return DOCUMENT_KINDS.get(path.suffix.lower())


def _decode(data: bytes, path: Path) -> str:
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise DocumentReadError(f"{path}: not UTF-8 (or GB18030) text")


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


def _html_text(data: bytes, path: Path) -> str:
    parser = _HtmlToText()
    parser.feed(_decode(data, path))
    parser.close()
    return parser.text()


def _pdf_text(path: Path) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise DocumentReadError(f"{path}: the PDF is encrypted")
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, OSError) as exc:
        raise DocumentReadError(f"{path}: cannot read the PDF: {exc}") from exc
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        raise DocumentReadError(f"{path}: the PDF has no extractable text (a scan?)")
    return text


def read_document(path: Path, data: bytes | None = None) -> str:
    """The text of a supported document; ``data`` is its bytes if already read."""
    kind = document_kind(path)
    if kind is None:
        known = ", ".join(sorted(DOCUMENT_KINDS))
        raise DocumentReadError(f"{path}: unsupported file type; supported: {known}")
    if kind == "pdf":
        return _pdf_text(path)
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DocumentReadError(f"{path}: {exc.strerror or exc}") from exc
    if kind == "html":
        return _html_text(data, path)
    return _decode(data, path)
