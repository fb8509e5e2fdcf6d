"""The routes DB-GPT's evaluation page calls, against a real ``ragmeter serve``: the shapes the
page reads, its errors, auth, and xlsx downloads opened with openpyxl."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openpyxl import load_workbook

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, NOTES_AWEL, write_models
from tests.integration.service import KEY, ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores

ROWS = [
    {"query": "What is AWEL?", "doc_name": "awel.md", "reference": "A workflow language."},
    {"query": "What are AWEL's layers?", "doc_name": "awel.md"},
    {"query": "=1+1 what do the notes say?", "doc_name": "notes.md"},
]
USER = "page-user-7"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    """A keyed server with a space ``awel`` embedded by the scripted server's ``hashed``."""
    home = tmp_path_factory.mktemp("dbgpt-page")
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with ServiceProcess(home) as server:
            with server.client() as http:
                space = {"name": "awel", "embedder": "hashed"}
                data(http.post("/knowledge/spaces", json=space), 201)
                files = [
                    ("files", ("awel.md", GUIDE_AWEL.encode(), "text/markdown")),
                    ("files", ("notes.md", NOTES_AWEL.encode(), "text/markdown")),
                ]
                data(http.post("/knowledge/spaces/awel/documents", files=files))
            yield server


@pytest.fixture
def page(service: ServiceProcess) -> Iterator[httpx.Client]:
    """The page's calls: ``/api/v1``, with the key and its ``user-id`` header."""
    headers = {"Authorization": f"Bearer {KEY}", "user-id": USER}
    with httpx.Client(base_url=f"{service.url}/api/v1", headers=headers, timeout=60) as http:
        yield http


def _upload_file(page: httpx.Client, name: str) -> dict[str, Any]:
    content = "\n".join(json.dumps(r) for r in ROWS).encode()
    files = {"doc_file": ("rows.jsonl", content, "application/octet-stream")}
    form = {"dataset_name": name, "members": "alice,bob"}
    found: dict[str, Any] = data(page.post("/evaluate/dataset/upload/file", data=form, files=files))
    return found


def _space_id(page: httpx.Client) -> str:
    spaces = data(page.post("/knowledge/space/list", json={}))
    return str(next(s["id"] for s in spaces if s["name"] == "awel"))


def _wait(page: httpx.Client, code: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        items = data(page.get("/evaluate/evaluations", params={"page": 1, "page_size": 100}))
        found: dict[str, Any] = next(i for i in items["items"] if i["evaluate_code"] == code)
        if found["state"] in ("done", "failed", "cancelled"):
            return found
        time.sleep(0.2)
    raise AssertionError(f"evaluation {code} did not finish")


def _workbook_rows(response: httpx.Response) -> list[tuple[Any, ...]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/vnd.openxmlformats")
    assert "filename=" in response.headers["content-disposition"]
    book = load_workbook(io.BytesIO(response.content), read_only=True)
    return [tuple(row) for row in book.worksheets[0].iter_rows(values_only=True)]


def test_without_the_key_every_page_route_is_refused(service: ServiceProcess) -> None:
    with httpx.Client(base_url=f"{service.url}/api/v1", timeout=30) as http:
        for method, path in [
            ("GET", "/evaluate/evaluations?page=1&page_size=10"),
            ("GET", "/evaluate/datasets?page=1&page_size=10"),
            ("GET", "/evaluate/test_auth"),
            ("GET", "/evaluate/dataset/download?code=x"),
            ("POST", "/evaluate/start"),
            ("POST", "/knowledge/space/list"),
            ("GET", "/model/types"),
            ("DELETE", "/evaluate/dataset?code=x"),
        ]:
            failure(http.request(method, path, json={}), 401)


def test_datasets_upload_list_download_and_delete(page: httpx.Client) -> None:
    made = _upload_file(page, "page-file")
    assert made["code"] == "page-file" and made["datasets_count"] == 3
    typed = "\n".join(json.dumps(r) for r in ROWS[:2])
    body = {"dataset_name": "page-typed", "members": "alice", "content": typed}
    assert data(page.post("/evaluate/dataset/upload/content", json=body))["storage_type"] == "db"
    listed = data(page.get("/evaluate/datasets", params={"page": 1, "page_size": 10}))
    by_code = {d["code"]: d for d in listed["items"]}
    assert listed["total_count"] >= 2
    assert by_code["page-file"]["storage_type"] == "oss"
    assert by_code["page-typed"]["datasets_count"] == 2
    for field in ("name", "members", "gmt_create", "gmt_modified"):
        assert field in by_code["page-file"]
    rows = _workbook_rows(page.get("/evaluate/dataset/download", params={"code": "page-file"}))
    assert rows[0][:3] == ("query", "doc_name", "reference")
    assert rows[3][0] == "'=1+1 what do the notes say?"  # text, never a formula
    assert data(page.delete("/evaluate/dataset", params={"code": "page-typed"})) is True
    failure(page.delete("/evaluate/dataset", params={"code": "page-typed"}), 404)


def test_dataset_errors_are_json_naming_the_problem(page: httpx.Client) -> None:
    response = page.get("/evaluate/dataset/download", params={"code": "no-such"})
    assert response.headers["content-type"].startswith("application/json")
    assert "no-such" in failure(response, 404)
    bad = {"dataset_name": "bad", "content": '{"query": "q"}\n{"nope": 1}'}
    assert "line 2" in failure(page.post("/evaluate/dataset/upload/content", json=bad), 400)
    _upload_file(page, "twice")
    assert "already exists" in failure(
        page.post(
            "/evaluate/dataset/upload/file",
            data={"dataset_name": "twice"},
            files={"doc_file": ("r.jsonl", b'{"query": "q"}', "text/plain")},
        ),
        409,
    )
    update = {"code": "twice", "members": "x"}
    assert "members" in failure(page.post("/evaluate/dataset/members/update", json=update), 501)


def test_form_pickers_and_frame_calls(page: httpx.Client) -> None:
    assert _space_id(page).isdigit()
    assert data(page.post("/app/list", json={}))["app_list"] == []
    metrics = data(
        page.get("/evaluate/metrics", params={"scene_key": "recall", "scene_value": "1"})
    )
    names = {m["name"]: m for m in metrics}
    assert names["RetrieverHitRateMetric"]["describe"].startswith("RetrieverHitRateMetric")
    assert "FaithfulnessMetric" not in names  # needs a judge
    assert data(page.get("/model/types")) == []
    assert data(page.get("/chat/dialogue/list")) == []
    assert {"oss", "db"} <= {k for t in data(page.get("/evaluate/storage/types")) for k in t}
    assert data(page.get("/evaluate/test_auth"))["user_id"] == USER


def test_an_evaluation_starts_at_once_finishes_and_downloads(page: httpx.Client) -> None:
    _upload_file(page, "for-eval")
    form = {
        "scene_key": "recall",
        "scene_value": _space_id(page),
        "parallel_num": "1",
        "datasets": "for-eval",
        "evaluate_metrics": "RetrieverHitRateMetric",
    }
    started = data(page.post("/evaluate/start", json=form))
    assert started["state"] in ("pending", "running")
    code = started["evaluate_code"]
    done = _wait(page, code)
    assert done["state"] == "done", done["log_info"]
    assert done["user_id"] == USER and done["datasets_name"] == "for-eval"
    assert done["evaluate_metrics"] == "RetrieverHitRateMetric"
    assert set(json.loads(done["average_score"])) == {"RetrieverHitRateMetric"}
    detail = data(page.get("/evaluate/evaluation/detail/show", params={"evaluate_code": code}))
    assert [d["code"] for d in detail] == ["0", "1", "2"]
    assert all(set(d) == set(detail[0]) for d in detail)
    assert all(isinstance(d["RetrieverHitRateMetric"], float) for d in detail)
    download = page.get("/evaluate/evaluation/result/download", params={"evaluate_code": code})
    rows = _workbook_rows(download)
    assert rows[0][:4] == ("row", "query", "metric", "score") and len(rows) == 4
    assert data(page.delete("/evaluate/evaluation", params={"evaluation_code": code})) is True
    failure(page.get("/evaluate/evaluation/detail/show", params={"evaluate_code": code}), 404)


def test_start_errors_name_the_field(page: httpx.Client) -> None:
    form = {"scene_key": "recall", "scene_value": "awel", "datasets": "missing-set"}
    assert "missing-set" in failure(page.post("/evaluate/start", json=form), 404)
    _upload_file(page, "for-errors")
    form.update(datasets="for-errors", parallel_num="many")
    assert "parallel_num" in failure(page.post("/evaluate/start", json=form), 400)
    form.update(parallel_num="100000")
    assert "max_parallel" in failure(page.post("/evaluate/start", json=form), 400)
    form.update(parallel_num="1", evaluate_metrics="NoSuchMetric")
    assert "NoSuchMetric" in failure(page.post("/evaluate/start", json=form), 400)
    missing = page.get("/evaluate/evaluation/result/download", params={"evaluate_code": "nope"})
    assert "nope" in failure(missing, 404)
