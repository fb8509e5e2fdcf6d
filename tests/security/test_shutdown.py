"""Attacker's tests, stopping (issue 11, findings 6 and 7): a server told to stop (SIGTERM)
while it embeds a large upload exits within ``[server] shutdown_timeout`` plus a margin and
leaves a consistent store; query strings never reach its log. Real ``ragmeter serve``."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from ragmeter.store.db import Store
from ragmeter.store.models import ChunkRecord, DocumentRecord
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import ServiceProcess, data
from tests.pdf_files import cpu_bomb

pytestmark = pytest.mark.both_stores

SHUTDOWN_TIMEOUT = 10  # the default
#: start-up of the exit, the batch being embedded when the signal comes, a busy machine
MARGIN = 15


def _documents(count: int) -> list[tuple[str, bytes]]:
    """``count`` markdown files of ~60 KB: about 900 chunks of 64 characters each."""
    line = "Turn the compost heap every week and keep it as moist as a wrung sponge.\n\n"
    return [(f"guide/part{i}.md", (f"# Part {i}\n\n" + line * 800).encode()) for i in range(count)]


def _consistent(url: str) -> tuple[int, int]:
    """(documents, chunks) in the store at ``url``, after checking every document holds
    exactly the chunks it records: no batch was half written."""
    store = Store(url)
    try:
        with store.session() as session:
            counted = dict(
                session.execute(
                    select(ChunkRecord.document_id, func.count()).group_by(ChunkRecord.document_id)
                ).all()
            )
            documents = session.execute(select(DocumentRecord.id, DocumentRecord.chunk_count)).all()
        for doc_id, chunk_count in documents:
            assert counted.get(doc_id, 0) == chunk_count, (doc_id, chunk_count, counted)
        assert set(counted) <= {doc_id for doc_id, _ in documents}
        return len(documents), sum(counted.values())
    finally:
        store.close()


def _terminate(server: ServiceProcess, uploading: threading.Thread) -> float:
    """SIGTERM the server while ``uploading`` runs; seconds until it exited."""
    assert server.proc is not None
    signalled = time.monotonic()
    server.proc.terminate()
    server.proc.wait(timeout=SHUTDOWN_TIMEOUT + MARGIN)
    took = time.monotonic() - signalled
    uploading.join(timeout=30)
    return took


def test_sigterm_during_a_large_upload_stops_within_the_deadline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    files = _documents(6)  # ~360 KB, ~5,400 chunks: ~36 s of embedding with this judge
    with ScriptedJudgeServer(latency_ms=3000) as judge:  # each embedding request takes 3 s
        write_models(home, judge.url)
        with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
            config.write(f"\n[server]\nshutdown_timeout = {SHUTDOWN_TIMEOUT}\n")
        server = ServiceProcess(home).start()
        try:
            with server.client() as http:
                chunking = {"strategy": "size", "chunk_size": 64, "chunk_overlap": 0}
                space = {"name": "big", "embedder": "hashed", "chunking": chunking}
                data(http.post("/knowledge/spaces", json=space), 201)
            answer: dict[str, Any] = {}

            def upload() -> None:
                parts = [("files", (name, body)) for name, body in files]
                with server.client() as client:
                    try:
                        response = client.post("/knowledge/spaces/big/documents", files=parts)
                        answer["status"], answer["body"] = response.status_code, response.json()
                    except httpx.HTTPError as exc:  # the connection closed by the stop
                        answer["error"] = repr(exc)

            uploading = threading.Thread(target=upload)
            uploading.start()
            with server.client() as http:
                deadline = time.monotonic() + 120
                while data(http.get("/knowledge/spaces/big"))["chunks"] == 0:
                    assert time.monotonic() < deadline and uploading.is_alive(), answer
                    time.sleep(0.2)
            took = _terminate(server, uploading)
        finally:
            server.stop()
    assert took < SHUTDOWN_TIMEOUT + MARGIN
    assert answer.get("status") == 503, answer
    assert "the server is stopping" in answer["body"]["err_msg"]
    documents, chunks = _consistent(server.store_url)
    assert (
        0 < documents < len(files) and 0 < chunks < 5_400
    )  # stopped part way, kept what was stored


def _pdf_workers() -> list[int]:
    """Pids of document reader subprocesses running now."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"_document_worker.py" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_sigterm_while_a_pdf_is_read_stops_its_reader(tmp_path: Path) -> None:
    """A PDF that takes minutes of CPU to read is being read when the server is told to stop:
    its reader is killed, the server exits within the deadline and the caller hears why."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "ragmeter.toml").write_text(
        f"[server]\nshutdown_timeout = {SHUTDOWN_TIMEOUT}\npdf_seconds = 300\n", encoding="utf-8"
    )
    server = ServiceProcess(home).start()
    answer: dict[str, Any] = {}
    try:
        with server.client() as http:
            data(http.post("/knowledge/spaces", json={"name": "pdfs"}), 201)

        def upload() -> None:
            with server.client() as client:
                files = [("files", ("slow.pdf", cpu_bomb()))]
                try:
                    response = client.post("/knowledge/spaces/pdfs/documents", files=files)
                    answer["status"], answer["body"] = response.status_code, response.json()
                except httpx.HTTPError as exc:
                    answer["error"] = repr(exc)

        uploading = threading.Thread(target=upload)
        uploading.start()
        deadline = time.monotonic() + 60
        while not _pdf_workers():
            assert time.monotonic() < deadline and uploading.is_alive(), answer
            time.sleep(0.1)
        took = _terminate(server, uploading)
    finally:
        server.stop()
    assert took < SHUTDOWN_TIMEOUT + MARGIN
    assert not _pdf_workers()  # the reader did not outlive the server
    assert answer.get("status") == 503 and "stopping" in answer["body"]["err_msg"], answer


def test_query_strings_stay_out_of_the_access_log(tmp_path: Path) -> None:
    with ServiceProcess(tmp_path / "home", log_level="info") as server:
        assert httpx.get(f"{server.url}/health?token=secret-in-query").status_code == 200
        with server.client() as http:
            http.get("/knowledge/spaces", params={"api_key": "another-secret"})
    log = server.log.read_text(encoding="utf-8")
    assert '"GET /health HTTP/1.1" 200' in log  # the access log is on
    assert "/api/v2/serve/knowledge/spaces HTTP/1.1" in log
    assert "secret-in-query" not in log and "another-secret" not in log
