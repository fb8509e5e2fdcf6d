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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from openpyxl import load_workbook
from playwright.sync_api import Download, Locator, Page, expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, NOTES_AWEL, write_models
from tests.integration.service import KEY, POOL_LIMITS, ServiceProcess, data, free_port, wait_run

pytestmark = pytest.mark.both_stores

WHEEL = "dbgpt_app-0.8.2-py3-none-any.whl"
CACHE = Path.home() / ".cache" / "ragmeter-tests"
WEB = CACHE / "dbgpt-app-0.8.2-web"
ROWS = [
    {"query": "What is AWEL?", "doc_name": "awel.md"},
    {"query": "What are AWEL's layers?", "doc_name": "awel.md"},
]
#: the file the page's dataset form uploads
UPLOADED = [
    {"query": "How does AWEL chain operators?", "doc_name": "awel.md"},
    {"query": "What do the notes say about AWEL?", "doc_name": "notes.md"},
    {"query": "=cmd|' /C calc'!A0 stays text", "doc_name": "notes.md"},
]
RECALL_METRICS = ["RetrieverHitRateMetric", "RetrieverMRRMetric"]


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
    # idle connections expire before the server's 5 s keep-alive closes them, so no request
    # goes out on a connection the server is closing
    client = httpx.AsyncClient(base_url=api, timeout=120, limits=POOL_LIMITS)

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


@dataclass(frozen=True)
class Site:
    """The page's origin (files and proxied ``/api``) and the ragmeter server behind it."""

    url: str
    service: ServiceProcess
    stored_run: str


def _seed(service: ServiceProcess) -> str:
    """A space ``awel``, a dataset ``stored`` and one finished run over them; its id."""
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
        body = {
            "scene_key": "recall",
            "scene_value": "awel",
            "datasets_name": "stored",
            "evaluate_metrics": RECALL_METRICS,
        }
        answer = http.post("/evaluate/evaluation", json=body)
        data(answer)
        run_id = answer.headers["x-ragmeter-run-id"]
        assert wait_run(http, run_id)["state"] == "done"
        return run_id


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Site]:
    web = _built_page()
    home = tmp_path_factory.mktemp("dbgpt-browser")
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with ServiceProcess(home) as service:
            run_id = _seed(service)
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
                yield Site(f"http://127.0.0.1:{port}", service, run_id)
            finally:
                server.should_exit = True
                thread.join(timeout=30)


def _open(site: Site, page: Page) -> list[str]:
    """Open ``/evaluation``; answers the list of API calls that failed (4xx, 5xx)."""
    errors: list[str] = []
    page.on("response", lambda r: errors.append(r.url) if r.status >= 400 else None)
    page.goto(f"{site.url}/evaluation")
    expect(page.get_by_text("发起评测")).to_be_visible(timeout=30_000)
    return errors


def _settled(page: Page) -> None:
    """Wait until no pop-up is still fading in or out, so a screenshot shows it whole."""
    moving = page.locator(".ant-zoom-appear, .ant-zoom-enter, .ant-zoom-leave, .ant-fade-leave")
    expect(moving).to_have_count(0)


def _api_errors(errors: list[str]) -> list[str]:
    return [u for u in errors if "/api/" in u]


def test_both_tabs_list_what_the_store_holds(
    site: Site, page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    errors = _open(site, page)
    row = page.get_by_role("row").filter(has_text=site.stored_run)
    expect(row).to_be_visible(timeout=30_000)
    expect(row.get_by_text("done")).to_be_visible()
    expect(row.get_by_text(",".join(RECALL_METRICS))).to_be_visible()
    shoot(page, "dbgpt-evaluations")
    page.get_by_text("数据集", exact=True).first.click()
    expect(page.get_by_role("cell", name="stored").first).to_be_visible(timeout=30_000)
    shoot(page, "dbgpt-datasets")
    assert not _api_errors(errors), errors


#: Sets a field of the page's form as its own select would: from the field's input (antd
#: gives it the id ``<form name>_<field>``) up React's fiber tree to the select Form.Item
#: controls, whose ``onChange`` stores the value in the form. DB-GPT 0.8.2's dataset form
#: never fills its storage-type select (the code that loads ``/storage/types`` is commented
#: out), so no option can be clicked and the form cannot validate without this.
SET_FIELD = """([id, value]) => {
  const input = document.getElementById(id);
  const key = input && Object.keys(input).find(k => k.startsWith('__reactFiber$'));
  for (let fiber = key ? input[key] : null; fiber; fiber = fiber.return) {
    const props = fiber.memoizedProps;
    if (props && props.id === id && 'options' in props && typeof props.onChange === 'function') {
      props.onChange(value);
      return true;
    }
  }
  return false;
}"""


def _modal(page: Page, title: str) -> Locator:
    return page.locator(".ant-modal-content").filter(has_text=title)


def test_a_dataset_uploads_from_the_form(
    site: Site, page: Page, shoot: Callable[[Page, str], Path], tmp_path: Path
) -> None:
    errors = _open(site, page)
    page.get_by_text("数据集", exact=True).first.click()
    page.get_by_role("button", name="添加数据集").click()
    modal = _modal(page, "添加数据集")
    expect(modal).to_be_visible()
    modal.locator("#basic_dataset_name").fill("from-page")
    assert page.evaluate(SET_FIELD, ["basic_storage_type", "oss"]) is True
    rows = tmp_path / "from-page.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in UPLOADED), encoding="utf-8")
    modal.locator("input[type=file]").set_input_files(rows)
    expect(modal.get_by_text("from-page.jsonl")).to_be_visible()
    _settled(page)
    shoot(page, "dbgpt-dataset-form")
    modal.locator(".ant-modal-footer .ant-btn-primary").click()
    expect(page.get_by_text("上传成功")).to_be_visible(timeout=30_000)
    expect(modal).to_be_hidden()
    _settled(page)
    row = page.get_by_role("row").filter(has_text="from-page")
    expect(row).to_be_visible()
    expect(row.get_by_role("cell", name="3", exact=True)).to_be_visible()
    shoot(page, "dbgpt-dataset-uploaded")
    with page.expect_download() as info:
        _download_button(row).click()
    assert info.value.suggested_filename == "from-page.xlsx"
    sheet = _workbook(info.value, tmp_path)
    assert sheet[0][:2] == ("query", "doc_name")
    assert [r[0] for r in sheet[1:]] == [
        *(r["query"] for r in UPLOADED[:2]),
        "'" + UPLOADED[2]["query"],  # formula-like text stays text
    ]
    with site.service.client() as http:
        stored = data(http.get("/datasets/from-page/rows", params={"limit": 10}))
    assert [r["query"] for r in stored["items"]] == [r["query"] for r in UPLOADED]
    assert not _api_errors(errors), errors


def _pick(page: Page, modal: Locator, field: str, option: str) -> None:
    """Open the form's select ``field`` and click its option starting with ``option``."""
    modal.locator(f".ant-form-item:has(#basic_{field}) .ant-select-selector").click()
    dropdown = page.locator(".ant-select-dropdown:not(.ant-select-dropdown-hidden)")
    wanted = dropdown.locator(".ant-select-item-option").filter(has_text=option).first
    holder = dropdown.locator(".rc-virtual-list-holder")
    for _ in range(60):  # a long list is drawn a screen at a time: scroll until it is there
        if wanted.count():
            break
        holder.evaluate("list => { list.scrollTop += list.clientHeight / 2; }")
        page.wait_for_timeout(50)
    wanted.click()
    expect(dropdown).to_be_hidden()


def _workbook(download: Download, tmp_path: Path) -> list[tuple[Any, ...]]:
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    book = load_workbook(saved, read_only=True)
    return [tuple(row) for row in book.worksheets[0].iter_rows(values_only=True)]


def _download_button(row: Locator) -> Locator:
    """A row's 下载 button (antd spaces two-character Chinese labels: 下 载)."""
    return row.get_by_role("button", name="下 载").or_(row.get_by_role("button", name="下载"))


def _new_run(site: Site, page: Page) -> Locator:
    """The row of the run the form started, once the page shows it done (reloading)."""
    rows = page.get_by_role("row").filter(has_text="recall").filter(has_not_text=site.stored_run)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        expect(rows).to_have_count(1, timeout=30_000)
        if rows.get_by_text("done", exact=True).count():
            return rows
        time.sleep(0.5)
        page.reload()
    raise AssertionError("the run started from the page did not finish")


def test_an_evaluation_starts_from_the_form_finishes_and_its_results_show_and_download(
    site: Site, page: Page, shoot: Callable[[Page, str], Path], tmp_path: Path
) -> None:
    errors = _open(site, page)
    page.get_by_role("button", name="发起评测").click()
    modal = _modal(page, "发起测评")
    expect(modal).to_be_visible()
    _pick(page, modal, "scene_key", "recall")
    _pick(page, modal, "scene_value", "awel")
    _pick(page, modal, "datasets", "stored")
    _pick(page, modal, "evaluate_metrics", "RetrieverHitRateMetric:")
    _settled(page)
    shoot(page, "dbgpt-evaluation-form")
    modal.locator(".ant-modal-footer .ant-btn-primary").click()
    expect(page.get_by_text("发起成功")).to_be_visible(timeout=30_000)
    expect(modal).to_be_hidden()
    _settled(page)
    row = _new_run(site, page)
    expect(row.get_by_role("cell", name="RetrieverHitRateMetric", exact=True)).to_be_visible()
    row.get_by_role("button", name="+").or_(row.locator(".ant-table-row-expand-icon")).click()
    expect(page.get_by_text("2/2 rows")).to_be_visible()
    shoot(page, "dbgpt-evaluation-done")

    row.get_by_role("button", name="评分明细").click()
    detail = _modal(page, "评分明细")
    expect(detail).to_be_visible(timeout=30_000)
    for wanted in ROWS:
        expect(detail.get_by_role("cell", name=wanted["query"], exact=True)).to_be_visible()
    expect(detail.get_by_role("columnheader", name="RetrieverHitRateMetric")).to_be_visible()
    expect(detail.get_by_text("[1] ").first).to_be_visible()  # the retrieved chunks, numbered
    _settled(page)
    shoot(page, "dbgpt-evaluation-detail")
    detail.get_by_role("button", name="返 回").click()
    expect(detail).to_be_hidden()

    with page.expect_download() as info:
        _download_button(row).click()
    sheet = _workbook(info.value, tmp_path)
    assert info.value.suggested_filename.endswith(".xlsx")
    assert sheet[0][:4] == ("row", "query", "metric", "score")
    assert sorted((r[1], r[2]) for r in sheet[1:]) == sorted(
        (r["query"], "RetrieverHitRateMetric") for r in ROWS
    )
    assert all(isinstance(r[3], int | float) for r in sheet[1:]), sheet
    assert not _api_errors(errors), errors
