"""Attacker's tests, amplification (issue 11, finding 4): a small upload must not become
thousands of chunks or minutes of CPU, and no template may pad or convert a value. Each runs
against a real ``ragmeter serve`` with a key, and checks chunk counts in the store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.helpers import GUIDE_AWEL, run, scripted_home
from tests.integration.service import ServiceProcess, data, failure
from tests.pdf_files import memory_bomb, pdf, shown_text, text_bomb

pytestmark = pytest.mark.both_stores

CAPS = """
[server]
max_document_chars = 50000
max_document_chunks = 300
max_upload_chunks = 500
max_upload_files = 5
pdf_memory_mb = 128
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Path]:
    with scripted_home(tmp_path_factory.mktemp("amplification-home"), CAPS) as folder:
        yield folder


@pytest.fixture(scope="module")
def service(home: Path) -> Iterator[ServiceProcess]:
    with ServiceProcess(home) as server:
        with server.client() as http:
            for name, size in (("docs", 512), ("fine", 64)):
                chunking = {"strategy": "size", "chunk_size": size, "chunk_overlap": 0}
                body = {"name": name, "embedder": "hashed", "chunking": chunking}
                data(http.post("/knowledge/spaces", json=body), 201)
        yield server


def _upload(http: httpx.Client, space: str, *files: tuple[str, bytes]) -> httpx.Response:
    parts = [("files", (name, content, "application/octet-stream")) for name, content in files]
    return http.post(f"/knowledge/spaces/{space}/documents", files=parts)


def _stored(http: httpx.Client, space: str) -> tuple[int, int]:
    """(documents, chunks) of a space, as the store holds them."""
    info: dict[str, Any] = data(http.get(f"/knowledge/spaces/{space}"))
    chunks = data(http.get(f"/knowledge/spaces/{space}/chunks", params={"limit": 1}))["total"]
    assert chunks == info["chunks"]
    return info["documents"], chunks


def test_a_pdf_that_inflates_into_text_is_refused_by_the_caps(service: ServiceProcess) -> None:
    bomb = text_bomb(1_000_000)  # 3.5 KB on disk; unbounded, 2,000 chunks of 512
    assert len(bomb) < 5_000
    with service.client() as http:
        before = _stored(http, "docs")
        message = failure(
            _upload(http, "docs", ("notes/good.md", GUIDE_AWEL.encode()), ("bomb.pdf", bomb)), 413
        )
        assert "bomb.pdf: the PDF holds more than 50000 characters" in message
        assert "[server] max_document_chars" in message
        assert _stored(http, "docs") == before  # nothing half-added, not even the good file


def test_one_content_stream_on_many_pages_is_refused(service: ServiceProcess) -> None:
    pages = pdf(shown_text("Compost heaps need air and water. " * 8), pages=400)
    with service.client() as http:
        before = _stored(http, "docs")
        message = failure(_upload(http, "docs", ("pages.pdf", pages)), 413)
        assert "pages.pdf" in message and "[server] max_document_chars" in message
        assert _stored(http, "docs") == before


def test_chunks_per_document_and_per_upload_are_capped(service: ServiceProcess) -> None:
    text = ("Turn the compost heap every week, and keep it moist. " * 800).encode()  # 800 chunks
    with service.client() as http:
        before = _stored(http, "fine")
        message = failure(_upload(http, "fine", ("long.txt", text)), 413)
        assert "long.txt: cut into more than 300 chunks ([server] max_document_chunks)" in message
        quarter = text[: len(text) // 4]  # 200 chunks each: under the document cap
        files = [(f"part{i}.txt", quarter + str(i).encode()) for i in range(3)]
        message = failure(_upload(http, "fine", *files), 413)
        assert "more than 500 chunks ([server] max_upload_chunks)" in message
        assert _stored(http, "fine") == before
        added = data(_upload(http, "fine", *files[:2]))
        assert added["chunks"] == 400 and _stored(http, "fine")[1] == before[1] + 400


def test_files_per_upload_are_capped(service: ServiceProcess) -> None:
    files = [(f"n{i}.md", b"# note\n\ntext\n") for i in range(6)]
    with service.client() as http:
        before = _stored(http, "docs")
        message = failure(_upload(http, "docs", *files), 413)
        assert "6 files in one upload; at most 5 ([server] max_upload_files)" in message
        assert _stored(http, "docs") == before


def test_a_pdf_the_reader_cannot_hold_in_its_memory_is_a_4xx(service: ServiceProcess) -> None:
    bomb = memory_bomb()  # ~70 KB inflating to 70 MB, past pdf_memory_mb = 128 with pypdf
    with service.client() as http:
        before = _stored(http, "docs")
        message = failure(_upload(http, "docs", ("inflates.pdf", bomb)), 422)
        assert "inflates.pdf: reading the PDF needs more than 128 MB of memory" in message
        assert "[server] pdf_memory_mb" in message and "/tmp" not in message
        assert _stored(http, "docs") == before


def test_a_normal_pdf_still_works_in_the_service(service: ServiceProcess) -> None:
    guide = pdf(shown_text("Turn the compost heap every week."), pages=2)
    with service.client() as http:
        added = data(_upload(http, "docs", ("guide/compost.pdf", guide)))
        assert added["added"] == ["guide/compost.pdf"] and added["chunks"] == 1
        (document,) = [
            d for d in data(http.get("/knowledge/spaces/docs/documents")) if d["kind"] == "pdf"
        ]
        assert document["source"] == "upload:guide/compost.pdf"  # never the server's temp path


def test_the_cli_keeps_its_freedom(home: Path, tmp_path: Path) -> None:
    """The [server] caps bind the service only; the CLI reads the same PDFs in full."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "big.pdf").write_bytes(text_bomb(100_000))  # over the service's 50,000
    (folder / "guide.pdf").write_bytes(pdf(shown_text("Turn the compost heap every week.")))
    assert run("space", "create", "local", "--embedder", "hashed", home=home).returncode == 0
    added = run("space", "add", "local", str(folder), home=home)
    assert added.returncode == 0, added.stderr
    assert "added 2" in added.stdout


@pytest.mark.parametrize(
    "template",
    ["{query:>100000000}", "{query:{context}}", "{query!r}", "{query.__class__}", "{query[0]}"],
)
def test_templates_that_pad_convert_or_reach_into_values_are_400s(
    service: ServiceProcess, template: str
) -> None:
    with service.client() as http:
        prompt = {"code": "pad", "template": f"{template} {{context}} {{answer}} {{query}}"}
        message = failure(http.post("/prompts", json=prompt), 400)
        assert f"template field {template}" in message
        failure(http.get("/prompts/pad"), 404)
        request = {
            "scene_key": "dataset",
            "datasets": [{"query": "q", "response": "a", "retrieved_contexts": ["c"]}],
            "evaluate_metrics": [f"AnswerRelevancyMetric(prompt_template={template})"],
            "context": {"model": "scripted"},
        }
        message = failure(http.post("/evaluate/evaluation", json=request), 400)
        assert "AnswerRelevancyMetric prompt_template" in message
        assert f"template field {template}" in message
