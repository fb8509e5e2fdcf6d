"""Issue 26 F4 and F10: xlsx downloads.

F4: the results download built the whole run in memory on the threads every route shares
(200k results: 40 s and +770 MB; 6 parallel downloads stalled every other threaded route for
43 s). Results are now read a hundred rows at a time into a write-only workbook on a temporary
file, built on a pool of its own: at most ``[server] max_exports`` at once, more are a 429.
The pool's workers are processes: on threads, two workbooks (pure Python) held the
interpreter lock so that the first read of a run beside them took 6 s instead of 0.2 s.

F10: a dataset of over 16,384 fields uploaded, and its download answered 500 forever. Fields
per dataset are capped at upload (``[server] max_dataset_fields``), and a wider dataset
stored before the cap is a 413 naming Excel's limit, never a 500."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openpyxl import load_workbook

from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store
from tests.integration.helpers import scripted_home
from tests.integration.service import KEY, ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

ROWS = 20_000
METRICS = ["mrr", "hit_rate", "precision", "recall", "map"]
PARALLEL = 6
#: seconds another route may take to answer while the downloads are built
RESPONSIVE = 2.0


def _peak_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _peak(server: ServiceProcess) -> int:
    assert server.proc is not None
    return _peak_of(server.proc.pid)


def _children(server: ServiceProcess) -> list[int]:
    assert server.proc is not None
    pids: list[int] = []
    for task in Path(f"/proc/{server.proc.pid}/task").iterdir():
        pids += [int(p) for p in (task / "children").read_text().split()]
    return pids


@pytest.fixture(scope="module")
def big_run(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, str]]:
    """A server holding a run of 20,000 rows x 5 metrics (100,000 results), restarted after
    the run so its peak memory counts only the downloads."""
    with scripted_home(tmp_path_factory.mktemp("xlsx-home")) as home:
        rows = [
            {"query": f"question {i}", "retrieved_ids": ["a", "b"], "reference_ids": ["b"]}
            for i in range(ROWS)
        ]
        body = {"scene_key": "dataset", "datasets": rows, "evaluate_metrics": METRICS}
        with ServiceProcess(home) as server, server.client() as http:
            run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
            assert wait_run(http, run_id, timeout=300)["state"] == "done"
        with ServiceProcess(home) as server:
            yield server, run_id


def _page(server: ServiceProcess) -> httpx.Client:
    headers = {"Authorization": f"Bearer {KEY}"}
    return httpx.Client(base_url=f"{server.url}/api/v1", headers=headers, timeout=300)


def test_parallel_downloads_are_bounded_and_other_routes_keep_answering(
    big_run: tuple[ServiceProcess, str],
) -> None:
    server, run_id = big_run
    before = _peak(server)
    answers: list[httpx.Response] = []

    def download() -> None:
        with _page(server) as page:
            params = {"evaluate_code": run_id}
            answers.append(page.get("/evaluate/evaluation/result/download", params=params))

    threads = [threading.Thread(target=download) for _ in range(PARALLEL)]
    for thread in threads:
        thread.start()
    waits: list[float] = []
    with server.client() as http:
        while any(t.is_alive() for t in threads):
            started = time.monotonic()
            assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200
            data(http.get(f"/evaluate/runs/{run_id}"))  # a threaded route reading the store
            waits.append(time.monotonic() - started)
            time.sleep(0.2)
    for thread in threads:
        thread.join()
    grown = _peak(server) - before
    built = [a for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code == 429]
    assert len(built) == 2 and len(refused) == PARALLEL - 2, [a.status_code for a in answers]
    for answer in refused:
        assert "[server] max_exports" in answer.json()["err_msg"]
    # every answer but one within RESPONSIVE, and that one within twice it: a busy machine
    # (CI: two builds and another test process on two cores) once slowed a single answer to
    # 2.7 s; workbooks built on the server's threads slowed reads to 6 s, and built on its
    # event loop, an answer would wait for a whole build (11 s when idle)
    waits.sort()
    assert len(waits) >= 3 and waits[-2] < RESPONSIVE, f"answers: {waits}"
    assert waits[-1] < 2 * RESPONSIVE, f"slowest other answer {waits[-1]:.1f} s"
    assert grown < 250_000_000, f"the server grew by {grown / 1e6:.0f} MB"
    pids = _children(server)
    builders = [_peak_of(pid) for pid in pids]  # the pool's, kept for the next
    assert builders and max(builders) < 250_000_000, f"a workbook's process peaked at {builders}"
    sheet = load_workbook(io.BytesIO(built[0].content), read_only=True).active
    assert sheet is not None
    lines = sheet.iter_rows(values_only=True)
    assert next(lines)[:4] == ("row", "query", "metric", "score")
    assert next(lines)[:4] == (0, "question 0", METRICS[0], 0.5)
    assert sum(1 for _ in lines) == ROWS * len(METRICS) - 1
    server.kill()  # no shutdown hook stops the pool: its processes end by themselves
    deadline = time.monotonic() + 10
    while (
        left := [p for p in pids if Path(f"/proc/{p}").exists()]
    ) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"a workbook's process outlived its killed server: {left}"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with scripted_home(tmp_path_factory.mktemp("fields-home")) as home, ServiceProcess(home) as s:
        yield s


def _wide(fields: int) -> str:
    return json.dumps({"query": "q", **{f"f{i}": i for i in range(fields)}})


def test_a_dataset_with_too_many_fields_is_refused_at_upload(service: ServiceProcess) -> None:
    wide = _wide(17_000)
    with service.client() as http:
        files = {"file": ("wide.jsonl", wide.encode(), "application/octet-stream")}
        message = failure(http.post("/datasets", files=files), 413)
        assert "[server] max_dataset_fields" in message and "at most 1,000 fields" in message
        assert "row 0 (line 1)" in message
        body = {"scene_key": "dataset", "datasets": [json.loads(wide)], "evaluate_metrics": ["mrr"]}
        assert "max_dataset_fields" in failure(http.post("/evaluate/runs", json=body), 413)
    with _page(service) as page:
        body = {"dataset_name": "wide", "content": wide}
        message = failure(page.post("/evaluate/dataset/upload/content", json=body), 413)
        assert "[server] max_dataset_fields" in message
        # fields are counted over all rows, not one row at a time
        rows = "\n".join(json.dumps({"query": "q", f"f{i}": i}) for i in range(1_200))
        body = {"dataset_name": "spread", "content": rows}
        message = failure(page.post("/evaluate/dataset/upload/content", json=body), 413)
        assert "row 999 (line 1000)" in message
        fine = {"dataset_name": "fine", "content": _wide(900)}
        data(page.post("/evaluate/dataset/upload/content", json=fine))
        download = page.get("/evaluate/dataset/download", params={"code": "fine"})
        assert download.status_code == 200
        sheet = load_workbook(io.BytesIO(download.content), read_only=True).active
        assert sheet is not None and len(next(sheet.iter_rows(values_only=True))) == 901


def test_a_wide_dataset_stored_before_the_cap_is_a_413_not_a_500(
    service: ServiceProcess,
) -> None:
    store = Store(service.store_url)
    try:
        RunStore(store).add_dataset([json.loads(_wide(17_000))], name="stored-wide")
    finally:
        store.close()
    with _page(service) as page:
        for _ in range(2):
            answer = page.get("/evaluate/dataset/download", params={"code": "stored-wide"})
            message = failure(answer, 413)
            assert "17,001 fields" in message and "16,384 columns" in message
