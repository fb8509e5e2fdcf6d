"""Finding 3: sizes and counts a request controls are capped, answering a 4xx that names the
limit before any work: retrieval depth, rows, metric names, parallel work, app timeouts; an app
reply larger than its cap is cut off while it streams, never held, stored or returned whole."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from ragmeter.errors import MetricError
from ragmeter.runs import resolve_metrics
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, scripted_home, write_models
from tests.integration.service import ServiceProcess, data, failure, wait_run
from tests.security.listener import Listener

pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    with Listener() as found:
        yield found


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with (
        scripted_home(
            tmp_path_factory.mktemp("sizes-home"),
            '\n[server]\nallow_app_hosts = ["127.0.0.1"]\nmax_rows = 500\n',
        ) as home,
        ServiceProcess(home) as server,
    ):
        with server.client() as http:
            space = {"name": "awel", "embedder": "hashed"}
            data(http.post("/knowledge/spaces", json=space), 201)
            files = [("files", ("awel.md", GUIDE_AWEL.encode(), "text/markdown"))]
            data(http.post("/knowledge/spaces/awel/documents", files=files))
        yield server


def _recall(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "scene_key": "recall",
        "scene_value": "awel",
        "evaluate_metrics": ["RetrieverHitRateMetric", "RetrieverMRRMetric"],
        "datasets": [{"query": f"what is AWEL {i}?", "doc_name": "awel.md"} for i in range(5)],
    }
    body.update(extra)
    return body


def test_retrieval_depth_is_capped(service: ServiceProcess) -> None:
    with service.client() as http:
        message = failure(
            http.post("/evaluate/evaluation", json=_recall(context={"top_k": 10**9})), 400
        )
        assert "context.top_k" in message and "[server] max_top_k" in message
        for spec in ("mrr@1000000000", "mrr(top_k=5000)", "P_5000", "P.5000", "ndcg_cut_99999"):
            message = failure(
                http.post("/evaluate/evaluation", json=_recall(evaluate_metrics=[spec])), 400
            )
            assert "max_top_k" in message, message
        body = {"query": "AWEL", "top_k": 10**9}
        message = failure(http.post("/knowledge/spaces/awel/retrieve", json=body), 400)
        assert "max_top_k" in message
        app = {"kind": "rag", "space": "awel", "model": "scripted", "top_k": 10**9}
        message = failure(http.post("/apps", json={"name": "deep", "config": app}), 400)
        assert "config.top_k" in message and "max_top_k" in message
        # within the cap, a depth beyond the space's chunk count allocates only what exists
        rows = data(http.post("/evaluate/evaluation", json=_recall(context={"top_k": 1000})))
        assert len(rows[0][0]["contexts"]) <= 5 and rows[0][0]["score"] == 1.0


def test_rows_metrics_and_parallel_work_are_counted_before_any_work(
    service: ServiceProcess,
) -> None:
    with service.client() as http:
        before = data(http.get("/evaluate/runs"))["total"]
        many = _recall(datasets=[{"query": "q", "doc_name": "awel.md"}] * 100_000)
        message = failure(http.post("/evaluate/evaluation", json=many), 413)
        assert "100000 rows" in message and "[server] max_rows" in message
        names = [f"ndcg@{i}" for i in range(1, 100_001)]
        message = failure(http.post("/evaluate/runs", json=_recall(evaluate_metrics=names)), 400)
        assert "[server] max_metrics" in message
        message = failure(http.post("/evaluate/runs", json=_recall(parallel_num=10**6)), 400)
        assert "[server] max_parallel" in message
        # one name each, many metrics once read: trec_eval's sets and parameter lists count
        # as the metrics they make
        cuts = ",".join(str(i) for i in range(1, 60))
        for names in (["all_trec"], [f"P.{cuts}"], [f"ndcg_cut.{cuts}", "official"]):
            message = failure(
                http.post("/evaluate/runs", json=_recall(evaluate_metrics=names)), 400
            )
            assert "[server] max_metrics" in message and "trec_eval" in message, message
        after = data(http.get("/evaluate/runs"))["total"]
    assert after == before  # nothing was stored or queued


def test_a_stored_dataset_over_max_rows_is_refused_by_its_count(service: ServiceProcess) -> None:
    """A dataset stored before ``max_rows`` was lowered (or by the command line) is refused
    from its stored count, before its rows are read."""
    store = Store(service.store_url)
    try:
        rows = [{"query": f"q{i}", "doc_name": "awel.md"} for i in range(501)]
        RunStore(store).add_dataset(rows, name="over")
    finally:
        store.close()
    body = _recall(datasets=None, datasets_name="over")
    with service.client() as http:
        before = data(http.get("/evaluate/runs"))["total"]
        message = failure(http.post("/evaluate/runs", json=body), 413)
        after = data(http.get("/evaluate/runs"))["total"]
    assert "dataset 'over' holds 501 rows" in message and "[server] max_rows" in message
    assert after == before


def test_app_timeouts_are_capped(service: ServiceProcess, listener: Listener) -> None:
    app = {"name": "slow", "config": {"kind": "http", "url": listener.url(), "timeout": 1e9}}
    with service.client() as http:
        message = failure(http.post("/apps", json=app), 400)
    assert "config.timeout" in message and "[server] max_app_timeout" in message


def test_an_app_reply_over_the_cap_is_cut_off_while_it_streams(
    service: ServiceProcess, listener: Listener
) -> None:
    app = {"name": "huge", "config": {"kind": "http", "url": listener.url("/huge?mb=50")}}
    body = {
        "scene_key": "app",
        "scene_value": "huge",
        "context": {"model": "scripted"},
        "evaluate_metrics": ["AnswerRelevancyMetric"],
        "datasets": [{"query": "what is AWEL?"}],
    }
    with service.client() as http:
        data(http.post("/apps", json=app), 201)
        response = http.post("/evaluate/evaluation", json=body)
        rows = data(response)
        run_id = response.headers["X-Ragmeter-Run-Id"]
        stored = http.get(f"/evaluate/runs/{run_id}/results")
    result = rows[0][0]
    assert result["score"] is None and "larger than 1,000,000 bytes" in result["error"]
    assert result["prediction"] is None
    assert len(stored.content) < 100_000  # nothing of the 50 MB was kept
    assert listener.cut_short >= 1  # the server stopped reading: the rest was never sent


def test_a_metric_named_twice_is_refused_naming_it() -> None:
    with pytest.raises(MetricError, match="given twice: mrr"):
        resolve_metrics(["mrr", "ndcg@3", "mrr"])


def test_a_run_longer_than_its_budget_stops_and_an_app_that_never_answers_stops_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A key holder's run of rows that each take seconds cannot hold a worker for days: past
    ``[server] max_run_hours`` it stops, keeping its rows, resumable. An app whose first tries
    all time out stops its run at once instead of waiting out every row."""
    from tests.security.app_server import AppServer

    home = tmp_path_factory.mktemp("budget-home")
    queries = [f"slow question {i}" for i in range(5)]
    with (
        ScriptedJudgeServer() as judge,
        AppServer(slow=dict.fromkeys(queries, 3.0)) as endpoint,
    ):
        write_models(home, judge.url)
        with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
            config.write('\n[server]\nallow_app_hosts = ["127.0.0.1"]\nmax_run_hours = 0.002\n')
        with ServiceProcess(home) as server, server.client() as http:
            patient = {"kind": "http", "url": endpoint.url, "timeout": 30}
            impatient = {"kind": "http", "url": endpoint.url, "timeout": 1}
            data(http.post("/apps", json={"name": "patient", "config": patient}), 201)
            data(http.post("/apps", json={"name": "impatient", "config": impatient}), 201)
            body = {
                "scene_key": "app",
                "context": {"model": "scripted"},
                "evaluate_metrics": ["AnswerRelevancyMetric"],
                "datasets": [{"query": q} for q in queries],
                "parallel_num": 1,
            }
            long_run = http.post("/evaluate/evaluation", json={**body, "scene_value": "patient"})
            message = failure(long_run, 400)
            assert "took longer than 0.002 h" in message and "[server] max_run_hours" in message
            run_id = long_run.headers["X-Ragmeter-Run-Id"]
            info = data(http.get(f"/evaluate/runs/{run_id}"))
            assert info["resumable"] and 0 < info["progress"]["done"] < len(queries)
            stuck = http.post("/evaluate/evaluation", json={**body, "scene_value": "impatient"})
            message = failure(stuck, 502)
            assert "does not answer within its 1 s timeout" in message
    assert sum(endpoint.asked.values()) < len(queries) * 3 + 2  # not three tries per row


def _stored_bytes(url: str) -> int:
    """The store's size on disk: its SQLite file, or its PostgreSQL database."""
    if url.startswith("sqlite"):
        return Path(url.split(":///", 1)[1]).stat().st_size
    store = Store(url)
    try:
        with store.session() as session:
            size = session.execute(text("SELECT pg_database_size(current_database())"))
            return int(size.scalar_one())
    finally:
        store.close()


def test_a_run_that_stores_more_than_its_budget_stops(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Results keep what each metric scored where it is not a field of the row (an agent's
    tool calls, read from its messages): a small request with wide rows and many metrics
    would store many times its size. Past ``[server] max_run_mb`` the run stops before a
    row would take it past, keeping the rows that fit, resumable. A wide row whose results
    are plain (a score each, a ranked list cut to a metric's k included) is stored once, as
    the dataset's row, never once per metric."""
    home = tmp_path_factory.mktemp("storage-home")
    (home / "ragmeter.toml").write_text("[server]\nmax_run_mb = 0.2\n", encoding="utf-8")
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": ""}}
    agent_rows = [
        {
            "query": f"q{i}",
            "messages": [
                {"role": "user", "content": f"q{i}"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {**call, "function": {"name": "search",
                                          "arguments": json.dumps({"q": "x" * 3_000, "i": i})}},
                ]},
            ],
            "reference_tool_calls": [{"name": "search", "arguments": {"i": i}}],
        }
        for i in range(200)
    ]  # fmt: skip
    agent_metrics = ["tool_call_accuracy", "tool_call_f1", "tool_call_precision",
                     "tool_call_recall", "argument_accuracy", "trajectory_match"]  # fmt: skip
    body = {
        "scene_key": "dataset",
        "evaluate_metrics": agent_metrics,
        "datasets": agent_rows,
        "parallel_num": 1,
    }
    wide = ["x" * 200 + f" chunk {i}" for i in range(10)]  # 2 KB of contexts per row
    rows = [{"query": f"q{i}", "contexts": wide, "factual": wide[:1]} for i in range(200)]
    plain = {**body, "evaluate_metrics": [f"mrr@{k}" for k in range(1, 11)]}
    with ServiceProcess(home) as server, server.client() as http:
        response = http.post("/evaluate/evaluation", json=body)
        message = failure(response, 400)
        assert "would store more than 0.2 MB" in message and "[server] max_run_mb" in message
        run_id = response.headers["X-Ragmeter-Run-Id"]
        info = data(http.get(f"/evaluate/runs/{run_id}"))
        assert info["resumable"] and 0 < info["progress"]["done"] < 20  # stopped early
        # the wide rows ranked by ten metrics: a list cut to each k is the row's, they fit
        assert len(data(http.post("/evaluate/evaluation", json={**plain, "datasets": rows}))) == 200
        before = _stored_bytes(server.store_url)
        one = {**plain, "datasets": [{**rows[0], "contexts": ["p" * 2_000_000]}]}  # 2 MB
        response = http.post("/evaluate/evaluation", json=one)
        # its ten results are plain (a score, nothing of the row copied): they fit
        assert len(data(response)[0]) == 10
    grown = _stored_bytes(server.store_url) - before
    assert grown < 8_000_000, grown  # the request's row once (2 MB), never its 10 copies


def test_a_page_of_results_stops_near_16_mb(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Twenty results of 1.5 MB each: a page asked for 1,000 items holds about 16 MB of them
    (read from the store a few at a time) and says how many there are to page on."""
    home = tmp_path_factory.mktemp("page-home")
    rows = [
        {"query": f"q{i}", "contexts": ["a b"], "factual": ["a b"], "pad": "p" * 1_500_000}
        for i in range(20)
    ]
    body = {"scene_key": "dataset", "evaluate_metrics": ["mrr"], "datasets": rows}
    with ServiceProcess(home) as server, server.client() as http:
        response = http.post("/evaluate/evaluation", json=body)
        assert response.status_code == 200, response.text[:300]
        run_id = response.headers["X-Ragmeter-Run-Id"]
        page = http.get(f"/evaluate/runs/{run_id}/results", params={"limit": 1000})
        found = data(page)
    assert found["total"] == 20 and 10 <= len(found["items"]) < 13, len(found["items"])
    assert len(page.content) < 20_000_000


def test_a_number_past_the_stores_integers_is_refused_or_not_found(
    service: ServiceProcess,
) -> None:
    """Ids, row numbers, versions and offsets compared with the store's integer columns:
    PostgreSQL's hold 32 bits (SQLite's 64) and failed the query on a larger number (a 500).
    A query parameter past them is a 422 naming it; an id or version in a path is not found."""
    big = 2**31
    with service.client() as http:
        rows = "".join(
            f'{{"query": "q{i}", "retrieved_ids": ["a"], "reference_ids": ["a"]}}\n'
            for i in range(3)
        )
        upload = {"file": ("ints.jsonl", rows.encode(), "application/x-ndjson")}
        data(http.post("/datasets", params={"name": "ints"}, files=upload), 201)
        body = {"scene_key": "dataset", "datasets_name": "ints", "evaluate_metrics": ["mrr"]}
        run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
        wait_run(http, run_id)
        refused = {
            "/evaluate/runs?dataset_id=" + str(2**70): "dataset_id",
            "/evaluate/runs?dataset_id=-1": "dataset_id",
            f"/evaluate/runs?dataset_id={big}": "dataset_id",
            f"/evaluate/runs/{run_id}/rows/{big}": "row_index",
            f"/evaluate/runs/{run_id}/results?offset={big}": "offset",
            f"/evaluate/runs/{run_id}/rows?offset={big}": "offset",
            f"/datasets/ints/rows?offset={big}": "offset",
            f"/evaluate/runs?offset={big}": "offset",
        }
        for path, name in refused.items():
            response = http.get(path)
            assert response.status_code == 422, (path, response.text)
            assert name in response.text, response.text
        for path in (f"/datasets/{big}", f"/datasets/{10**17}", f"/apps/{big}"):
            assert http.get(path).status_code == 404, path
        assert data(http.get(f"/evaluate/runs?dataset_id={big - 1}"))["total"] == 0
        assert data(http.get(f"/evaluate/runs/{run_id}/results?offset={2**30}"))["items"] == []
        audit = http.get("/audit", params={"before_id": big})  # the single key: an admin's
        assert audit.status_code == 422 and "before_id" in audit.text, audit.text
