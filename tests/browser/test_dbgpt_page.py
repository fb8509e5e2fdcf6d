"""DB-GPT's own built evaluation page (dbgpt-app 0.8.2's ``/evaluation``) in Chromium, its
``/api`` proxied to a real ``ragmeter serve``. The wheel is fetched once with ``pip download
--no-deps`` into ``~/.cache/ragmeter-tests`` (never into the repository)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from playwright.sync_api import Page, expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, NOTES_AWEL, write_models
from tests.integration.service import KEY, ServiceProcess, data, free_port

WHEEL = "dbgpt_app-0.8.2-py3-none-any.whl"
CACHE = Path.home() / ".cache" / "ragmeter-tests"
WEB = CACHE / "dbgpt-app-0.8.2-web"
ROWS = [
    {"query": "What is AWEL?", "doc_name": "awel.md"},
    {"query": "What are AWEL's layers?", "doc_name": "awel.md"},
]


def _built_page() -> Path:
    """The wheel's ``dbgpt_app/static/web/``, downloaded and unpacked on first use."""
    if not (WEB / "evaluation" / "index.html").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        if not (CACHE / WHEEL).exists():
            pip = [sys.executable, "-m", "pip", "download", "--no-deps", "dbgpt-app==0.8.2"]
            subprocess.run([*pip, "-d", str(CACHE)], check=True, capture_output=True)
        prefix = "dbgpt_app/static/web/"
        with zipfile.ZipFile(CACHE / WHEEL) as wheel:
            for name in wheel.namelist():
                if name.startswith(prefix) and not name.endswith("/"):
                    target = WEB / name[len(prefix) :]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(wheel.read(name))
    return WEB


def _front(api: str, web: Path) -> Starlette:
    """The page's files, with ``/api`` forwarded (with the key) to the ragmeter server."""
    client = httpx.AsyncClient(base_url=api, timeout=120)

    async def forward(request: Request) -> Response:
        headers = {
            k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")
        }
        headers["authorization"] = f"Bearer {KEY}"
        answer = await client.request(
            request.method,
            request.url.path,
            params=request.query_params,
            content=await request.body(),
            headers=headers,
        )
        kept = {
            k: v
            for k, v in answer.headers.items()
            if k.lower() not in ("content-length", "transfer-encoding", "content-encoding")
        }
        return Response(answer.content, status_code=answer.status_code, headers=kept)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()  # its pooled connections close with the server

    methods = ["GET", "POST", "DELETE", "PUT", "PATCH"]
    return Starlette(
        lifespan=lifespan,
        routes=[
            Route("/api/{rest:path}", forward, methods=methods),
            Mount("/", StaticFiles(directory=web, html=True)),
        ],
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    web = _built_page()
    home = tmp_path_factory.mktemp("dbgpt-browser")
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with ServiceProcess(home) as service:
            with service.client() as http:
                space = {"name": "awel", "embedder": "hashed"}
                data(http.post("/knowledge/spaces", json=space), 201)
                files = [
                    ("files", ("awel.md", GUIDE_AWEL.encode(), "text/markdown")),
                    ("files", ("notes.md", NOTES_AWEL.encode(), "text/markdown")),
                ]
                data(http.post("/knowledge/spaces/awel/documents", files=files))
                rows = "\n".join(json.dumps(r) for r in ROWS).encode()
                upload = {"file": ("stored.jsonl", rows, "text/plain")}
                data(http.post("/datasets", files=upload, data={"name": "stored"}), 201)
            port = free_port()
            config = uvicorn.Config(
                _front(service.url, web), host="127.0.0.1", port=port, log_level="warning"
            )
            server = uvicorn.Server(config)
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            deadline = time.monotonic() + 30
            while not server.started and time.monotonic() < deadline:
                time.sleep(0.05)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
                thread.join(timeout=30)


def test_both_tabs_list_what_the_store_holds(
    site: str, page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    errors: list[str] = []
    page.on("response", lambda r: errors.append(r.url) if r.status >= 400 else None)
    page.goto(f"{site}/evaluation")
    expect(page.get_by_text("发起评测")).to_be_visible(timeout=30_000)
    shoot(page, "dbgpt-evaluations")
    page.get_by_text("数据集", exact=True).first.click()
    expect(page.get_by_role("cell", name="stored").first).to_be_visible(timeout=30_000)
    shoot(page, "dbgpt-datasets")
    assert not [u for u in errors if "/api/" in u], errors
