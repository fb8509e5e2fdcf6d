"""Issue 11, finding 7 (run engine races) and 8 (internals in a run's error): a cancel is
never overwritten, a client that gives up does not strand its queued run, retry_failed redoes
only upstream failures, rows are fed continuously and committed as they finish, and an
unexpected failure stores a reference, not its text. Real SQLite files and, where the finding
is about the service, a real ``ragmeter serve``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.config import ServerConfig, Settings
from ragmeter.errors import NotFoundError, StoreError
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.metrics.retrieval import LEGACY_NO_RELEVANT_REASON
from ragmeter.reports import ResultRecord
from ragmeter.runs.execution.executor import execute_run
from ragmeter.runs.planning.plan import build_plan
from ragmeter.runs.planning.request import EvaluateServeRequest, config_from_request
from ragmeter.runs.storage.store import RunState, RunStore
from ragmeter.service.app import create_app
from ragmeter.store.db import Store
from tests.integration.service import ServiceProcess, data, wait_run
from tests.security.app_server import CONTEXTS, AppServer

pytestmark = pytest.mark.both_stores

ROWS = [
    {"query": f"q{i}", "retrieved_contexts": ["a", "b"], "reference_contexts": ["a"]}
    for i in range(5)
]


def _new_run(runs: RunStore, kb: KnowledgeBase) -> str:
    request = EvaluateServeRequest(
        scene_key="dataset", evaluate_metrics=["mrr", "hit_rate"], datasets=ROWS
    )
    config = config_from_request(request)
    plan = build_plan(config, ROWS, kb)
    names = [m.metric_name for m in plan.metrics]
    return runs.create(config, names, runs.add_dataset(ROWS).id, len(ROWS), {}).id


def _record(row: int, metric: str, score: float | None, error: str | None, kind: str | None) -> ResultRecord:  # fmt: skip
    return ResultRecord(
        row, metric, score, None, None, error, None, None, 0, f"q{row}", {}, None, kind
    )


def _another_process(kb: KnowledgeBase) -> RunStore:
    """The same SQLite file through a connection of its own, as another process has it."""
    return RunStore(Store(kb.store.url))


# -- 1. every state change is conditional on the state it expects --------------------------


def test_a_cancel_landing_before_finish_is_not_overwritten() -> None:
    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    run_id = _new_run(runs, kb)
    assert runs.start(run_id)
    runs.commit_rows(run_id, [_record(i, "mrr", 1.0, None, None) for i in range(5)], {})
    _another_process(kb).request_cancel(run_id)  # lands after the last commit
    assert runs.finish(run_id, "done") is False
    assert runs.interrupt(run_id) is False
    record = runs.get(run_id)
    assert (record.state, record.resumable, record.error) == ("cancelled", False, None)
    assert runs.start(run_id) is False  # cancelled is not pending


class CancelledJustBeforeFinish(RunStore):
    """The executor's store, with a cancel from another process landing right before the
    executor writes its final state (after its last commit and any state check)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        super().__init__(kb.store)
        self.other = _another_process(kb)

    def finish(
        self, run_id: str, state: RunState, error: str | None = None, kind: str | None = None
    ) -> bool:
        self.other.request_cancel(run_id)
        return super().finish(run_id, state, error, kind)


def test_the_executor_never_overwrites_a_cancel() -> None:
    kb = KnowledgeBase()
    runs = CancelledJustBeforeFinish(kb)
    run_id = _new_run(runs, kb)
    asyncio.run(execute_run(runs, kb, run_id))
    record = runs.get(run_id)
    assert (record.state, record.done_rows) == ("cancelled", 5)


# -- 3. retry_failed redoes only upstream failures -----------------------------------------


def test_retry_failed_forgets_only_rows_with_an_upstream_null() -> None:
    kb = KnowledgeBase()
    runs = RunStore(kb.store)
    run_id = _new_run(runs, kb)
    assert runs.start(run_id)
    kept_reason = "the judge found no statements in the reference"
    records = [
        # stored before kinds existed: "no relevant item" is the row's, anything else upstream
        _record(0, "mrr", None, LEGACY_NO_RELEVANT_REASON, None),
        _record(1, "mrr", None, "JudgeError: judge request failed after 5 tries", None),
        _record(2, "mrr", None, kept_reason, "input"),
        _record(3, "mrr", None, "app 'web' failed: 503", "upstream"),
        _record(4, "mrr", None, "ValueError: a bug", "metric"),
    ]
    records += [_record(i, "hit_rate", 1.0, None, None) for i in range(5)]
    runs.commit_rows(run_id, records, {})
    assert runs.finish(run_id, "done")
    reopened = runs.reopen(run_id, retry_failed=True)
    assert (reopened.state, reopened.done_rows) == ("pending", 3)
    assert runs.finished_rows(run_id) == {0, 2, 4}
    found, total = runs.results(run_id)
    assert total == 6 and {r.row_index for r in found} == {0, 2, 4}


@pytest.fixture
def app() -> Iterator[AppServer]:
    with AppServer(slow={"slow": 3.0, "hold": 4.0}, failing={"bad"}) as server:
        yield server


def _serve(home: Path, workers: int = 2) -> ServiceProcess:
    home.mkdir(parents=True, exist_ok=True)
    (home / "ragmeter.toml").write_text(
        f'[server]\nworkers = {workers}\nallow_app_hosts = ["127.0.0.1"]\n', encoding="utf-8"
    )
    return ServiceProcess(home)


def _app_run(rows: list[dict[str, Any]], parallel: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "scene_key": "app",
        "scene_value": "web",
        "evaluate_metrics": ["hit_rate", "mrr"],
        "datasets": rows,
        "parallel_num": parallel,
        **extra,
    }


#: a quick run without a target, to queue behind a busy one
_QUEUED = {"scene_key": "dataset", "evaluate_metrics": ["hit_rate"], "datasets": ROWS}


def _results(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    page = data(http.get(f"/evaluate/runs/{run_id}/results", params={"limit": 1000}))
    items: list[dict[str, Any]] = page["items"]
    return items


def test_retry_failed_redoes_the_row_the_app_failed_and_keeps_a_deterministic_null(
    tmp_path: Path, app: AppServer
) -> None:
    rows = [
        {"query": "good", "reference_contexts": [CONTEXTS[1]]},
        {"query": "empty", "reference_contexts": []},  # no relevant item: a null by the data
        {"query": "bad", "reference_contexts": [CONTEXTS[0]]},  # the app answers 503
    ]
    with _serve(tmp_path / "home") as server, server.client() as http:
        data(http.post("/apps", json={"name": "web", "config": {"kind": "http", "url": app.url}}), 201)  # fmt: skip
        run_id = data(http.post("/evaluate/runs", json=_app_run(rows)), 202)["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
        before = _results(http, run_id)
        kinds = {(r["row_index"], r["metric_name"]): r["error_kind"] for r in before}
        assert kinds == {
            (0, "hit_rate"): None, (0, "mrr"): None,
            (1, "hit_rate"): "input", (1, "mrr"): "input",
            (2, "hit_rate"): "upstream", (2, "mrr"): "upstream",
        }  # fmt: skip
        asked = dict(app.asked)
        app.fail.clear()  # the app is back
        resumed = data(http.post(f"/evaluate/runs/{run_id}/resume", params={"retry_failed": "true"}), 202)  # fmt: skip
        assert resumed["progress"] == {"done": 2, "total": 3}
        info = wait_run(http, run_id)
        after = _results(http, run_id)
    assert info["state"] == "done" and info["progress"] == {"done": 3, "total": 3}
    assert app.asked - Counter(asked) == Counter({"bad": 1})  # only the failed row again
    assert [r for r in after if r["row_index"] != 2] == [r for r in before if r["row_index"] != 2]
    assert [r["score"] for r in after if r["row_index"] == 2] == [1.0, 1.0]


# -- 2. a client that disconnects does not strand its queued run ---------------------------


def test_a_client_that_gives_up_while_its_run_is_queued_does_not_strand_it(
    tmp_path: Path, app: AppServer
) -> None:
    with _serve(tmp_path / "home", workers=1) as server, server.client() as http:
        data(http.post("/apps", json={"name": "web", "config": {"kind": "http", "url": app.url}}), 201)  # fmt: skip
        busy = _app_run([{"query": "hold", "reference_contexts": [CONTEXTS[0]]}], parallel=1)
        busy_id = data(http.post("/evaluate/runs", json=busy), 202)["run_id"]  # holds the worker
        queued = {**_QUEUED, "evaluate_code": "queued-run"}
        with pytest.raises(httpx.ReadTimeout):  # the client gives up while the run waits
            http.post("/evaluate/evaluation", json=queued, timeout=1.0)
        assert data(http.get("/evaluate/runs/queued-run"))["state"] == "pending"
        assert wait_run(http, busy_id)["state"] == "done"
        info = wait_run(http, "queued-run", timeout=60)
    assert (info["state"], info["progress"]) == ("done", {"done": 5, "total": 5})


async def test_a_cancelled_evaluation_handler_leaves_its_queued_run_to_run(
    app: AppServer,
) -> None:
    """The same, with the handler cancelled for certain (a disconnect does that under some
    middlewares and proxies; uvicorn alone lets the handler finish): the real app in-process
    over ASGI, so cancelling the client's request cancels the handler."""
    settings = Settings(server=ServerConfig(workers=1, allow_app_hosts=["127.0.0.1"]))
    api = create_app(settings)
    svc = api.state.services
    transport = httpx.ASGITransport(app=api)
    base = "http://127.0.0.1/api/v2/serve"
    try:
        async with httpx.AsyncClient(transport=transport, base_url=base) as http:
            created = await http.post("/apps", json={"name": "web", "config": {"kind": "http", "url": app.url}})  # fmt: skip
            assert created.status_code == 201, created.text
            busy = _app_run([{"query": "hold", "reference_contexts": [CONTEXTS[0]]}], parallel=1)
            assert (await http.post("/evaluate/runs", json=busy)).status_code == 202
            queued = {**_QUEUED, "evaluate_code": "cancelled-handler"}
            waiting = asyncio.ensure_future(http.post("/evaluate/evaluation", json=queued))
            state = await _state_soon(svc.runs, "cancelled-handler", {"pending"})
            assert state == "pending"  # stored and queued behind the busy run
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            final = await _state_soon(svc.runs, "cancelled-handler", {"done", "failed"}, 60)
    finally:
        await asyncio.to_thread(svc.manager.shutdown)
    assert final == "done"


async def _state_soon(runs: RunStore, run_id: str, wanted: set[str], within: float = 20) -> str:
    """The run's state once it is one of ``wanted`` (or the last seen after ``within`` s)."""
    deadline = time.monotonic() + within
    state = ""
    while time.monotonic() < deadline:
        try:
            state = (await asyncio.to_thread(runs.get, run_id)).state
        except NotFoundError:
            state = ""
        if state in wanted:
            break
        await asyncio.sleep(0.05)
    return state


# -- 5. rows are fed continuously and committed as they finish -----------------------------


def test_fast_rows_are_stored_while_a_slow_row_is_still_in_flight(
    tmp_path: Path, app: AppServer
) -> None:
    rows = [{"query": "slow", "reference_contexts": [CONTEXTS[0]]}]
    rows += [{"query": f"fast {i}", "reference_contexts": [CONTEXTS[0]]} for i in range(7)]
    slow_answered = app.event("slow")
    with _serve(tmp_path / "home") as server, server.client() as http:
        data(http.post("/apps", json={"name": "web", "config": {"kind": "http", "url": app.url}}), 201)  # fmt: skip
        run_id = data(http.post("/evaluate/runs", json=_app_run(rows, parallel=2)), 202)["run_id"]
        most_before_slow = 0
        while not slow_answered.is_set():
            info = data(http.get(f"/evaluate/runs/{run_id}"))
            if not slow_answered.is_set():
                most_before_slow = max(most_before_slow, info["progress"]["done"])
            time.sleep(0.05)
        final = wait_run(http, run_id)
    # with batches of parallel_num = 2 the first batch would wait for the slow row: nothing
    # could be stored before it answered; fed continuously, the 7 fast rows are
    assert most_before_slow == 7, most_before_slow
    assert final["state"] == "done" and final["progress"] == {"done": 8, "total": 8}


# -- 8. an unexpected failure stores a reference, not its text -----------------------------


class BrokenStore(RunStore):
    """A store whose reads or writes fail with text that must not reach the API."""

    def __init__(self, kb: KnowledgeBase, failure: Exception) -> None:
        super().__init__(kb.store)
        self.failure = failure

    def commit_results(
        self, run_id: str, values: Any, rows: int, usage: dict[str, float], **_: Any
    ) -> str:
        raise self.failure


@pytest.mark.parametrize(
    "failure",
    [
        StoreError(
            "cannot store results of run: (sqlite3.OperationalError) disk I/O error "
            "[SQL: INSERT INTO results (run_id, query) VALUES (?, ?)] "
            "[parameters: ('x', 'secret row')] url sqlite:////srv/private/ragmeter.db"
        ),
        RuntimeError("unexpected state at /srv/private/tmp/xyz with token=hunter2"),
    ],
)
def test_an_internal_failure_stores_a_reference_and_logs_the_details(
    failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    kb = KnowledgeBase()
    runs = BrokenStore(kb, failure)
    run_id = _new_run(runs, kb)
    with caplog.at_level(logging.ERROR, logger="ragmeter.runs.execution.executor"):
        asyncio.run(execute_run(runs, kb, run_id))
    record = runs.get(run_id)
    assert (record.state, record.error_kind) == ("failed", "internal")
    assert record.error is not None
    for secret in ("SQL", "INSERT", "parameters", "/srv/private", "hunter2", "secret row"):
        assert secret not in record.error
    reference = record.error.split("reference ")[1].split(",")[0]
    assert record.error == f"internal error; reference {reference}, see the server log"
    logged = [r for r in caplog.records if reference in r.getMessage()]
    assert logged and "Traceback" in logged[0].getMessage()  # the details are in the log
    assert str(failure).split(" at ")[0].split(": ")[0] in logged[0].getMessage()
