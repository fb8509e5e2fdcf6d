"""DB-GPT's evaluation page routes (``/api/v1/evaluate/...`` and the frame's calls) attacked
against a real keyed ``ragmeter serve``: no key is refused everywhere, names cannot reach paths,
page sizes, uploads and parallel work are capped by ``[server]``, and text in a downloaded
workbook never becomes a formula."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from openpyxl import load_workbook

from ragmeter.service.routes.dbgpt_page import frame_router, router
from tests.integration.helpers import GUIDE_AWEL, scripted_home
from tests.integration.service import KEY, ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

#: what a spreadsheet would run if it read these cells as formulas
FORMULAS = ["=cmd|' /C calc'!A0", '+HYPERLINK("http://x")', "-2+3", "@SUM(1)", "=1+1"]
MAX_UPLOAD_MB = 0.05
MAX_PARALLEL = 4


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    extra = f"\n[server]\nmax_upload_mb = {MAX_UPLOAD_MB}\nmax_parallel = {MAX_PARALLEL}\n"
    with (
        scripted_home(tmp_path_factory.mktemp("dbgpt-page-home"), extra) as home,
        ServiceProcess(home) as server,
    ):
        with server.client() as http:
            space = {"name": "awel", "embedder": "hashed"}
            data(http.post("/knowledge/spaces", json=space), 201)
            files = [("files", ("awel.md", GUIDE_AWEL.encode(), "text/markdown"))]
            data(http.post("/knowledge/spaces/awel/documents", files=files))
        yield server


@pytest.fixture
def page(service: ServiceProcess) -> Iterator[httpx.Client]:
    """The page's calls, with the key."""
    headers = {"Authorization": f"Bearer {KEY}", "user-id": "attacker"}
    with httpx.Client(base_url=f"{service.url}/api/v1", headers=headers, timeout=60) as http:
        yield http


def _upload(page: httpx.Client, name: str, rows: list[dict[str, Any]]) -> httpx.Response:
    content = "\n".join(json.dumps(r) for r in rows).encode()
    files = {"doc_file": ("rows.jsonl", content, "application/octet-stream")}
    return page.post("/evaluate/dataset/upload/file", data={"dataset_name": name}, files=files)


def _page_routes() -> list[tuple[str, str]]:
    """Every method and path the page's routers answer, under ``/api/v1``."""
    found = []
    for prefix, routes in (("/evaluate", router.routes), ("", frame_router.routes)):
        for route in routes:
            assert isinstance(route, APIRoute)
            found += [(method, prefix + route.path) for method in sorted(route.methods or ())]
    return found


def test_without_a_key_every_page_route_is_refused_and_does_nothing(
    page: httpx.Client, service: ServiceProcess
) -> None:
    data(_upload(page, "kept", [{"query": "q", "doc_name": "awel.md"}]))
    routes = [*_page_routes(), ("GET", "/evaluate/metrics")]
    assert ("DELETE", "/evaluate/dataset") in routes
    assert ("GET", "/evaluate/evaluation/result/download") in routes
    query = {"code": "kept", "evaluate_code": "x", "evaluation_code": "x", "page_size": "10"}
    for key in (None, "wrong-key-0123456789"):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        with httpx.Client(base_url=f"{service.url}/api/v1", headers=headers) as http:
            for method, path in routes:
                answer = http.request(method, path, params=query, json={"dataset_name": "x"})
                assert answer.status_code == 401, (method, path, answer.status_code)
                failure(answer, 401)
    listed = data(page.get("/evaluate/datasets", params={"page": 1, "page_size": 100}))
    assert "kept" in [d["code"] for d in listed["items"]]  # the keyless delete did nothing


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "a/b", "..\\windows", "/abs", "x\x00y", "~root", "..", "  "]
)
def test_a_dataset_name_with_path_characters_is_refused(page: httpx.Client, name: str) -> None:
    message = failure(_upload(page, name, [{"query": "q"}]), 400)
    assert "dataset name" in message
    body = {"dataset_name": name, "content": '{"query": "q"}'}
    failure(page.post("/evaluate/dataset/upload/content", json=body), 400)
    for path in ("/evaluate/dataset/download", "/evaluate/dataset"):
        method = "GET" if path.endswith("download") else "DELETE"
        answer = page.request(method, path, params={"code": name})
        assert answer.status_code in (400, 404) and "passwd" not in answer.text.replace(name, "")
        assert answer.headers["content-type"].startswith("application/json")


def test_an_uploaded_file_name_with_a_path_is_refused(page: httpx.Client) -> None:
    content = json.dumps({"query": "q"}).encode()
    files = {"doc_file": ("../../../../tmp/evil.jsonl", content, "text/plain")}
    form = {"dataset_name": "odd-file"}
    message = failure(page.post("/evaluate/dataset/upload/file", data=form, files=files), 400)
    assert "unsafe file name" in message
    failure(page.get("/evaluate/dataset/download", params={"code": "odd-file"}), 404)


@pytest.mark.parametrize("path", ["/evaluate/datasets", "/evaluate/evaluations"])
@pytest.mark.parametrize(
    "params", [{"page": 1, "page_size": 10**9}, {"page": 2**40, "page_size": 10}, {"page": 0}]
)
def test_a_huge_page_is_refused(page: httpx.Client, path: str, params: dict[str, int]) -> None:
    message = failure(page.get(path, params=params), 422)
    assert any(name in message for name in params), message


def test_content_over_max_upload_mb_is_refused(page: httpx.Client) -> None:
    line = json.dumps({"query": "q" * 1000}) + "\n"
    content = line * int(MAX_UPLOAD_MB * 1_000_000 / len(line) + 2)
    body = {"dataset_name": "too-big", "content": content}
    message = failure(page.post("/evaluate/dataset/upload/content", json=body), 413)
    assert "[server] max_upload_mb" in message
    files = {"doc_file": ("big.jsonl", content.encode(), "text/plain")}
    form = {"dataset_name": "too-big"}
    message = failure(page.post("/evaluate/dataset/upload/file", data=form, files=files), 413)
    assert "max_upload_mb" in message
    listed = data(page.get("/evaluate/datasets", params={"page": 1, "page_size": 100}))
    assert "too-big" not in [d["code"] for d in listed["items"]]


def _evaluations(page: httpx.Client) -> int:
    listed = data(page.get("/evaluate/evaluations", params={"page": 1, "page_size": 10}))
    return int(listed["total_count"])


def test_start_with_parallel_num_over_the_cap_is_refused_and_queues_nothing(
    page: httpx.Client,
) -> None:
    data(_upload(page, "for-parallel", [{"query": "q", "doc_name": "awel.md"}]))
    before = _evaluations(page)
    for parallel in (str(MAX_PARALLEL + 1), 10**9, "99999999999999999999"):
        body = {
            "scene_key": "recall",
            "scene_value": "awel",
            "datasets": "for-parallel",
            "parallel_num": parallel,
        }
        answer = page.post("/evaluate/start", json=body)
        assert answer.status_code == 400, answer.text
        assert "[server] max_parallel" in failure(answer, 400)
    assert _evaluations(page) == before


def _cells(response: httpx.Response) -> list[Any]:
    assert response.status_code == 200, response.text
    book = load_workbook(io.BytesIO(response.content))  # not read-only: data_type is exact
    return [cell for row in book.worksheets[0].iter_rows() for cell in row]


def test_formula_text_in_downloads_stays_text(page: httpx.Client, service: ServiceProcess) -> None:
    rows = [{"query": text, "doc_name": "awel.md", "reference": text} for text in FORMULAS]
    data(_upload(page, "formulas", rows))
    cells = _cells(page.get("/evaluate/dataset/download", params={"code": "formulas"}))
    assert not [c.coordinate for c in cells if c.data_type == "f"]
    texts = [c.value for c in cells if isinstance(c.value, str)]
    for text in FORMULAS:
        assert texts.count("'" + text) == 2, (text, texts)  # query and reference
    body = {"scene_key": "recall", "scene_value": "awel", "datasets": "formulas"}
    code = data(page.post("/evaluate/start", json=body))["evaluate_code"]
    with service.client() as http:
        assert wait_run(http, code)["state"] == "done"
    params = {"evaluate_code": code}
    cells = _cells(page.get("/evaluate/evaluation/result/download", params=params))
    assert not [c.coordinate for c in cells if c.data_type == "f"]
    texts = [c.value for c in cells if isinstance(c.value, str)]
    for text in FORMULAS:
        assert "'" + text in texts and text not in texts
