"""Attacker's tests, documents (issue 11, round 2): one upload must not freeze the server, break
its space, fail on a race, or show where the server's files live. Each runs against a real
``ragmeter serve`` with a key, and checks what the store holds afterwards."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.helpers import run, scripted_home
from tests.integration.service import ServiceProcess, data, failure
from tests.pdf_files import cpu_bomb

pytestmark = pytest.mark.both_stores

CAPS = """
[server]
max_document_chars = 2000000
max_upload_mb = 20
pdf_seconds = 1
"""

#: seconds a request that once took minutes (or hours) to answer must now answer within
DEADLINE = 20.0


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Path]:
    with scripted_home(tmp_path_factory.mktemp("documents-home"), CAPS) as folder:
        yield folder


@pytest.fixture(scope="module")
def service(home: Path) -> Iterator[ServiceProcess]:
    with ServiceProcess(home) as server:
        yield server


def _space(http: httpx.Client, name: str) -> str:
    """A new space with the default (markdown) chunking."""
    data(http.post("/knowledge/spaces", json={"name": name, "embedder": "hashed"}), 201)
    return name


def _upload(http: httpx.Client, space: str, *files: tuple[str, bytes]) -> httpx.Response:
    parts = [("files", (name, content, "application/octet-stream")) for name, content in files]
    return http.post(f"/knowledge/spaces/{space}/documents", files=parts)


def _stored(http: httpx.Client, space: str) -> tuple[int, int]:
    """(documents, chunks) of a space, as the store holds them."""
    info: dict[str, Any] = data(http.get(f"/knowledge/spaces/{space}"))
    return info["documents"], info["chunks"]


def test_a_line_of_a_million_spaces_is_chunked_in_bounded_time(service: ServiceProcess) -> None:
    """A 40 KB header line of spaces once took 22 s of regex backtracking with the GIL held
    (``/health`` waited as long), growing with the square of its length: 1 MB would take
    hours. The deadline is generous; the quadratic code misses it by orders of magnitude."""
    line = b"# x" + b" " * 1_000_000 + b"y\n"
    attack = line + b"\nCompost needs air and water.\n" + b"## title" + b"\t " * 250_000 + b"\n"
    with service.client() as http:
        _space(http, "spaces")
        started = time.monotonic()
        added = data(_upload(http, "spaces", ("x.txt", line), ("notes.md", attack)))
        assert time.monotonic() - started < DEADLINE
        assert added["added"] == ["notes.md"] and added["empty"] == ["x.txt"]
        assert httpx.get(f"{service.url}/health", timeout=DEADLINE).status_code == 200
        (chunk,) = data(http.get("/knowledge/spaces/spaces/chunks"))["items"]
        assert chunk["content"].endswith("Compost needs air and water.")


def _retrieve(http: httpx.Client, space: str, query: str, retriever: str) -> list[str]:
    """The documents of the hits, best first."""
    body = {"query": query, "retriever": retriever, "top_k": 5}
    return [
        h["document"] for h in data(http.post(f"/knowledge/spaces/{space}/retrieve", json=body))
    ]


def test_a_document_of_stop_words_leaves_its_space_working(service: ServiceProcess) -> None:
    """bm25s cannot index an empty vocabulary: such a document once answered 500, stayed
    stored, and every retrieval of the space answered 500 until a real word was added."""
    with service.client() as http:
        _space(http, "stopwords")
        added = data(_upload(http, "stopwords", ("x.txt", b"the a an. of to!")))
        assert added["added"] == ["x.txt"] and _stored(http, "stopwords") == (1, 1)
        assert _retrieve(http, "stopwords", "compost", "bm25") == []
        assert _retrieve(http, "stopwords", "the compost", "hybrid") == ["x.txt"]
        assert _retrieve(http, "stopwords", "the", "vector") == ["x.txt"]
        data(_upload(http, "stopwords", ("compost.md", b"# Compost\n\nTurn the heap weekly.\n")))
        assert _retrieve(http, "stopwords", "compost heap", "bm25") == ["compost.md"]
        # the word goes again: no BM25 index of the earlier revision answers for these chunks
        data(_upload(http, "stopwords", ("compost.md", b"# The\n\nand of the a.\n")))
        assert _retrieve(http, "stopwords", "compost heap", "bm25") == []
        assert _stored(http, "stopwords") == (2, 2)


def _race(service: ServiceProcess, space: str, *files: tuple[str, bytes]) -> list[httpx.Response]:
    """Each file uploaded by its own client, all released at once."""
    barrier = threading.Barrier(len(files))

    def upload(file: tuple[str, bytes]) -> httpx.Response:
        with service.client() as client:
            barrier.wait()
            return _upload(client, space, file)

    with ThreadPoolExecutor(len(files)) as pool:
        return list(pool.map(upload, files))


def test_two_uploads_racing_for_a_new_name_give_a_409_not_a_500(service: ServiceProcess) -> None:
    """Both uploads find no document of that name, embed, then insert it: the second insert
    once broke the unique (space, name) rule as an unexplained 500."""
    text = "\n\n".join(f"Paragraph {i}: turn the compost heap weekly." * 4 for i in range(300))
    with service.client() as http:
        _space(http, "race")
    statuses: list[list[int]] = []
    for round_ in range(3):
        name = f"race{round_}.md"
        answers = _race(
            service, "race", (name, text.encode()), (name, (text + "\n\nOne more.").encode())
        )
        statuses.append(sorted(a.status_code for a in answers))
        for answer in answers:
            if answer.status_code == 409:
                message = failure(answer, 409)
                assert f"document '{name}' was added to space 'race' by another upload" in message
        with service.client() as http:
            documents = data(http.get("/knowledge/spaces/race/documents"))
            (document,) = [d for d in documents if d["name"] == name]
            chunks = data(http.get("/knowledge/spaces/race/chunks", params={"doc_name": name}))
            assert document["chunk_count"] == chunks["total"] > 0  # one whole version stored
    assert all(s in ([200, 200], [200, 409]) for s in statuses), statuses
    assert [200, 409] in statuses, statuses  # the race did happen at least once


def test_documents_added_from_the_servers_disk_do_not_show_its_paths(
    service: ServiceProcess, home: Path, tmp_path: Path
) -> None:
    """An operator's ``ragmeter space add`` records the file's absolute path; a key holder
    listing the space's documents once read it (where the server keeps its files)."""
    private = tmp_path / "opdocs" / "private-team"
    private.mkdir(parents=True)
    (private / "payroll.md").write_text("# Payroll\n\nPaid monthly.\n", encoding="utf-8")
    on = {"home": home, "env": service.store_env}  # the operator's commands, on its store
    assert run("space", "create", "operator", "--embedder", "hashed", **on).returncode == 0
    added = run("space", "add", "operator", str(private / "payroll.md"), **on)
    assert added.returncode == 0, added.stderr
    with service.client() as http:
        data(_upload(http, "operator", ("team/notes.md", b"# Notes\n\nCompost weekly.\n")))
        answer = http.get("/knowledge/spaces/operator/documents")
        sources = {d["name"]: d["source"] for d in data(answer)}
    assert sources == {"payroll.md": "local:payroll.md", "team/notes.md": "upload:team/notes.md"}
    assert str(tmp_path) not in answer.text and "private-team" not in answer.text


@pytest.mark.parametrize("attack", [b"<a" * 50_000, b"</" * 100_000])  # ~7 s and ~3 s of CPU
def test_html_that_is_quadratic_to_parse_is_stopped_at_the_cpu_limit(
    service: ServiceProcess, attack: bytes
) -> None:
    """CPython's html.parser once spent 54 s of the server's CPU on 100 KB of ``<a``, then
    answered 500; it now runs in the document worker under ``pdf_seconds`` (1 s here)."""
    with service.client() as http:
        space = _space(http, f"html{attack[1]}")
        started = time.monotonic()
        message = failure(_upload(http, space, ("page.html", attack)), 422)
        assert time.monotonic() - started < DEADLINE
        assert "page.html: reading the HTML page took more than 1 s ([server] pdf_seconds)" in (
            message
        )
        assert _stored(http, space) == (0, 0)
        page = b"<html><body><h1>Ray</h1><p>Ray runs <b>distributed</b> Python.</p></body></html>"
        data(_upload(http, space, ("ray.html", page)))
        (chunk,) = data(http.get(f"/knowledge/spaces/{space}/chunks"))["items"]
        assert chunk["content"] == '"Ray": Ray runs distributed Python.'


def test_an_upload_of_many_slow_documents_stops_at_its_reading_budget(
    service: ServiceProcess,
) -> None:
    """Each document gets ``pdf_seconds`` of CPU, but an upload may carry 1,000 of them: one
    request could take hours. An upload's documents share 5 times ``pdf_seconds``."""
    bomb = cpu_bomb()
    files = [(f"slow{i}.pdf", bomb) for i in range(4)]
    files += [(f"slow{i}.html", b"<a" * 50_000) for i in range(4)]
    with service.client() as http:
        _space(http, "budget")
        started = time.monotonic()
        message = failure(
            _upload(http, "budget", ("fine.md", b"# Fine\n\nCompost.\n"), *files), 413
        )
        assert time.monotonic() - started < 5 * DEADLINE
        assert "reading this upload's PDF and HTML documents took more than 5 s of CPU" in message
        assert "([server] pdf_seconds)" in message
        assert _stored(http, "budget") == (0, 0)  # refused whole: not even the fine file
