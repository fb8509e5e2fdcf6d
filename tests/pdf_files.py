"""Small PDFs for tests, written byte by byte: plain ones, and hostile ones that are tiny on
disk but decompress into megabytes of text or memory, or take minutes of CPU to read."""

from __future__ import annotations

import zlib

__all__ = ["cpu_bomb", "memory_bomb", "pdf", "pypdf_limit_bomb", "shown_text", "text_bomb"]


def shown_text(text: str) -> bytes:
    """A content stream that shows ``text`` in Helvetica."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"BT /F1 12 Tf 72 720 Td (" + escaped.encode("latin-1") + b") Tj ET"


def pdf(content: bytes, *, pages: int = 1, compress: bool = False) -> bytes:
    """A PDF whose ``pages`` pages all draw one content stream (FlateDecode when
    ``compress``), with a correct cross-reference table."""
    stream = zlib.compress(content, 9) if compress else content
    flate = b" /Filter /FlateDecode" if compress else b""
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
        b"/Resources << /Font << /F1 4 0 R >> >> >>"
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        b"<< /Length %d%s >>\nstream\n" % (len(stream), flate) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *[page] * pages,
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def text_bomb(chars: int = 1_000_000) -> bytes:
    """A few KB whose one page holds ``chars`` characters of sentences (FlateDecode)."""
    sentence = "Compost heaps need air and water every week. "
    return pdf(shown_text(sentence * (chars // len(sentence) + 1)), compress=True)


def memory_bomb(megabytes: int = 70) -> bytes:
    """~70 KB whose content stream inflates to ``megabytes`` MB (under pypdf's 75 MB cap)."""
    return pdf(b"%" + b" " * (megabytes * 1_000_000), compress=True)


def pypdf_limit_bomb() -> bytes:
    """A content stream that inflates past pypdf's own 75 MB limit (LimitReachedError)."""
    return memory_bomb(80)


def cpu_bomb(operators: int = 8_000_000) -> bytes:
    """~80 KB with millions of text operators: minutes of CPU to extract."""
    return pdf(b"BT /F1 12 Tf " + b"(a) Tj " * operators + b"ET", compress=True)
