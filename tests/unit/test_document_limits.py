"""Documents are read under limits: PDFs in a subprocess with memory and CPU caps, text and
chunks up to caps, and every failure names the document and the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.errors import LimitError
from ragmeter.knowledge.chunking import ChunkingConfig, chunk_text
from ragmeter.knowledge.readers import (
    DocumentLimits,
    DocumentReadError,
    ReadingBudget,
    read_document,
)
from tests.pdf_files import cpu_bomb, memory_bomb, pdf, pypdf_limit_bomb, shown_text, text_bomb

SERVER = DocumentLimits(max_document_chars=100_000, pdf_memory_mb=1024, section="[server]")
SMALLEST = DocumentLimits(pdf_memory_mb=64, section="[server]")  # [server]'s least memory


def _write(tmp_path: Path, data: bytes, name: str = "doc.pdf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_plain_pdf_reads_under_the_smallest_memory_limit(tmp_path: Path) -> None:
    path = _write(tmp_path, pdf(shown_text("Turn the heap (weekly)."), pages=3))
    text = read_document(path, limits=SMALLEST, name="guide.pdf")
    assert text.count("Turn the heap (weekly).") == 3


def test_text_past_the_character_cap_is_refused_naming_the_limit(tmp_path: Path) -> None:
    bomb = text_bomb(2_000_000)
    assert len(bomb) < 20_000  # tiny on disk
    path = _write(tmp_path, bomb, "tmpname.pdf")
    with pytest.raises(LimitError) as caught:
        read_document(path, limits=SERVER, name="bomb.pdf")
    message = str(caught.value)
    assert message.startswith("bomb.pdf: the PDF holds more than 100000 characters")
    assert caught.value.setting == "[server] max_document_chars" and caught.value.status == 413
    assert str(tmp_path) not in message
    many_pages = _write(tmp_path, pdf(shown_text("word " * 200), pages=200))
    with pytest.raises(LimitError, match="more than 100000 characters"):
        read_document(many_pages, limits=SERVER, name="pages.pdf")
    text = _write(tmp_path, b"x " * 60_000, "big.txt")
    with pytest.raises(LimitError, match=r"big\.txt: the document holds 120000 characters"):
        read_document(text, limits=SERVER, name="big.txt")
    assert len(read_document(text)) == 120_000  # the library's default: no cap


def test_a_pdf_that_needs_more_memory_than_allowed_names_the_limit(tmp_path: Path) -> None:
    path = _write(tmp_path, memory_bomb())
    with pytest.raises(DocumentReadError) as caught:
        read_document(path, limits=SMALLEST, name="inflates.pdf")
    assert str(caught.value) == (
        "inflates.pdf: reading the PDF needs more than 64 MB of memory ([server] pdf_memory_mb)"
    )


def test_pypdfs_own_limits_are_a_read_error(tmp_path: Path) -> None:
    path = _write(tmp_path, pypdf_limit_bomb())
    with pytest.raises(DocumentReadError, match=r"^over\.pdf: the PDF is over pypdf's safety"):
        read_document(path, name="over.pdf")


def test_a_pdf_that_takes_too_long_is_stopped(tmp_path: Path) -> None:
    path = _write(tmp_path, cpu_bomb())
    limits = DocumentLimits(pdf_seconds=1, section="[server]")
    with pytest.raises(DocumentReadError, match=r"took more than 1 s \(\[server\] pdf_seconds\)"):
        read_document(path, limits=limits, name="slow.pdf")


def test_a_broken_pdf_names_the_document_not_the_path(tmp_path: Path) -> None:
    path = _write(tmp_path, b"%PDF-1.4 not really", "ragmeter-upload-x.pdf")
    with pytest.raises(DocumentReadError) as caught:
        read_document(path, name="report.pdf")
    assert str(caught.value).startswith("report.pdf: ") and str(tmp_path) not in str(caught.value)


def test_chunking_stops_one_past_a_cap() -> None:
    config = ChunkingConfig(strategy="size", chunk_size=100, chunk_overlap=99)
    text = "word " * 200_000  # a million characters; unbounded, ~200,000 chunks of 100
    assert len(chunk_text(text, config, max_chunks=50)) == 51
    by_chars = chunk_text(text, config, max_chars=10_000)
    assert sum(len(d.content) for d in by_chars) > 10_000 and len(by_chars) < 110


def test_a_long_header_path_takes_at_most_half_a_chunk() -> None:
    config = ChunkingConfig(strategy="markdown", chunk_size=100, chunk_overlap=10)
    text = "# " + "H" * 5_000 + "\n\n## " + "I" * 5_000 + "\n\n" + "body text. " * 30
    drafts = chunk_text(text, config)
    assert drafts and all(len(d.content) <= 100 for d in drafts)
    assert drafts[0].content.startswith('"HHH') and '…": ' in drafts[0].content
    assert drafts[0].meta["headers"] == ["H" * 199 + "…", "I" * 199 + "…"]  # 200 at most


def test_html_is_read_by_the_worker_under_its_cpu_limit(tmp_path: Path) -> None:
    """html.parser is quadratic in ``<a`` repeated: a minute of CPU for 100 KB."""
    path = _write(tmp_path, b"<a" * 50_000, "page.html")
    limits = DocumentLimits(pdf_seconds=1, section="[server]")
    with pytest.raises(DocumentReadError, match=r"^page\.html: reading the HTML page took more"):
        read_document(path, limits=limits, name="page.html")
    capped = DocumentLimits(max_document_chars=10, section="[server]")
    with pytest.raises(LimitError, match=r"^big\.html: the HTML page holds more than 10 char"):
        read_document(path, b"<p>" + b"x" * 11 + b"</p>", limits=capped, name="big.html")
    gb = "<h1>绿茶</h1><p>水温 八十度</p>".encode("gb18030")
    assert read_document(path, gb, name="tea.html") == "# 绿茶\n\n水温 八十度"


def test_one_calls_documents_share_a_reading_budget(tmp_path: Path) -> None:
    limits = DocumentLimits(pdf_seconds=1, max_upload_read_seconds=1.5, section="[server]")
    budget = ReadingBudget(limits)
    path = _write(tmp_path, cpu_bomb())
    with pytest.raises(DocumentReadError, match="took more than 1 s"):
        read_document(path, limits=limits, name="a.pdf", budget=budget)
    with pytest.raises(LimitError) as caught:  # half a second left: the budget ends it
        read_document(path, limits=limits, name="b.pdf", budget=budget)
    assert str(caught.value).startswith("b.pdf: not read; reading this upload's PDF and HTML")
    assert caught.value.setting == "[server] pdf_seconds" and caught.value.status == 413
    with pytest.raises(LimitError):  # nothing left: not even started
        read_document(path, limits=limits, name="c.pdf", budget=budget)
    fresh = ReadingBudget(limits)  # a quick document spends what it used, not its grant
    plain = _write(tmp_path, pdf(shown_text("Turn the heap.")), "plain.pdf")
    assert "Turn the heap." in read_document(plain, limits=limits, budget=fresh)
    assert fresh.left is not None and 0.5 < fresh.left < 1.5
