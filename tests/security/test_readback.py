"""Attacker's tests, records that cannot be read back (issue 11, finding 5): what would be
stored unreadable, or answer 500, is refused with a 4xx naming the problem; what is stored
reads back; a 500 carries no SQL, parameters, store URL password or server path. Each runs
against a real ``ragmeter serve`` with a key."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.config import STORE_URL_ENV
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store
from ragmeter.store.models import ResultRow, RunRecord
from tests.integration.helpers import scripted_home
from tests.integration.service import ServiceProcess, data, failure, wait_run
from tests.pdf_files import pypdf_limit_bomb

pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with (
        scripted_home(
            tmp_path_factory.mktemp("readback-home"),
            "\n[server]\nmax_upload_mb = 25\nmax_request_mb = 30\n",
        ) as home,
        ServiceProcess(home) as server,
    ):
        with server.client() as http:
            space = {"name": "docs", "embedder": "hashed"}
            data(http.post("/knowledge/spaces", json=space), 201)
        yield server


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


def _raw_json(levels: int) -> str:
    """``levels`` nested arrays as JSON text (json.dumps itself cannot write 10,000)."""
    return "[" * levels + "]" * levels


def _run(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"scene_key": "dataset", "datasets": rows, "evaluate_metrics": ["RetrieverMRRMetric"]}


ROW = {"query": "q", "retrieved_contexts": ["a", "b"], "reference_contexts": ["b"]}


@pytest.mark.parametrize("levels", [40, 900, 10_000])
def test_request_bodies_nested_too_deeply_are_400s(service: ServiceProcess, levels: int) -> None:
    body = json.dumps(_run([{**ROW, "metadata": {"deep": "HOLE"}}]))
    body = body.replace('"HOLE"', _raw_json(levels))
    with service.client() as http:
        for path in ("/evaluate/runs", "/evaluate/evaluation"):
            response = http.post(path, content=body, headers={"Content-Type": "application/json"})
            message = failure(response, 400)
            assert "nests deeper than 32 levels ([server] max_json_depth)" in message
        assert data(http.get("/evaluate/runs"))["total"] >= 0  # the list still reads


def test_a_run_nested_within_the_limit_reads_back(service: ServiceProcess) -> None:
    metadata = {"trace": _nested(25)}  # body, datasets, row, metadata, trace: 30 levels
    with service.client() as http:
        run_id = data(http.post("/evaluate/runs", json=_run([{**ROW, "metadata": metadata}])), 202)
        run_id = run_id["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
        results = data(http.get(f"/evaluate/runs/{run_id}/results"))
        assert [r["score"] for r in results["items"]] == [0.5]
        assert results["items"][0]["raw_dataset"]["metadata"] == metadata


def test_text_holding_a_nul_character_is_stored_and_looked_up_without_a_500(
    service: ServiceProcess,
) -> None:
    """PostgreSQL's text holds no NUL character (SQLite's does): a name looked up with one
    is not found, and a run whose row holds one finishes and reads back, not a 500 or a run
    failed by an internal error."""
    with service.client() as http:
        for path in ("/datasets/x%00y", "/evaluate/runs/x%00y", "/apps/a%00b", "/prompts/p%00q"):
            assert http.get(path).status_code == 404, path
        data(http.get("/evaluate/runs", params={"q": "a\x00b"}))  # a 200 (SQLite's LIKE
        # ends the pattern at the NUL, PostgreSQL's text holds U+FFFD: what it finds differs)
        row = {**ROW, "query": "q\x00nul", "retrieved_contexts": ["a\x00", "b"]}
        run_id = data(http.post("/evaluate/runs", json=_run([row])), 202)["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
        (result,) = data(http.get(f"/evaluate/runs/{run_id}/results"))["items"]
        assert result["score"] == 0.5 and result["query"] in ("q\x00nul", "q\ufffdnul")
        for q in ("nul", "nu"):  # the trigram index, then a scan of the run's rows
            found = data(http.get(f"/evaluate/runs/{run_id}/rows", params={"q": q}))
            assert found["total"] == 1, (q, found)
        assert data(http.get(f"/evaluate/runs/{run_id}/rows/0"))["row_index"] == 0


def _dataset(http: httpx.Client, name: str, content: bytes, **form: str) -> httpx.Response:
    return http.post("/datasets", files={"file": (name, content)}, data=form)


def test_records_stored_too_deep_before_the_limit_still_read(service: ServiceProcess) -> None:
    """A store written before depths were limited holds a result and a dataset 900 deep:
    reading them answers 200, the too-deep value replaced by a note."""
    deep: dict[str, Any] = {}
    for _ in range(900):
        deep = {"a": deep}
    store = Store(service.store_url)
    try:
        runs = RunStore(store)
        dataset = runs.add_dataset([{"query": "q", "metadata": deep}], name="old-deep")
        with store.session() as session:
            spec = {"scene": "dataset", "metrics": ["mrr"]}
            session.add(
                RunRecord(
                    id="old-deep", state="done", scene_key="dataset", dataset_id=dataset.id,
                    spec=spec, request={}, total_rows=1, done_rows=1, usage={},
                )
            )  # fmt: skip
            session.commit()
        with store.session() as session:
            raw = {"query": "q", "metadata": deep}
            session.add(
                ResultRow(
                    run_id="old-deep", row_index=0, metric_name="mrr", query="q", raw_dataset=raw
                )
            )
            session.commit()
    finally:
        store.close()
    with service.client() as http:
        item = data(http.get("/evaluate/runs/old-deep/results"))["items"][0]
        row = data(http.get("/datasets/old-deep/rows"))["items"][0]
    assert item["raw_dataset"] == {"not_shown": "nested deeper than 64 levels; not shown"}
    assert row == item["raw_dataset"]


def test_dataset_uploads_that_could_not_be_read_back_are_400s(service: ServiceProcess) -> None:
    ok_line = json.dumps(ROW).encode() + b"\n"
    deep_row = b'{"query": "q", "metadata": ' + _raw_json(10_000).encode() + b"}\n"
    too_deep = json.dumps({**ROW, "metadata": _nested(40)}).encode() + b"\n"
    with service.client() as http:
        message = failure(_dataset(http, "deep.jsonl", ok_line + deep_row), 400)
        assert message.startswith("deep.jsonl line 2: nested too deeply")
        message = failure(_dataset(http, "nested.jsonl", ok_line + too_deep), 400)
        assert "nested.jsonl line 2 (row 1) field 'metadata': nested deeper than 32" in message
        assert "[server] max_json_depth" in message
        latin = b"question,answer\nq1,a1\nq2,caf\xe9\n"
        message = failure(_dataset(http, "latin.csv", latin), 400)
        assert message.startswith("latin.csv line 3: is not UTF-8 text")
        huge_cell = b"question,answer\nq1,a1\nq2," + b"x" * 19_000_000 + b"\n"
        message = failure(_dataset(http, "huge.csv", huge_cell), 400)
        assert message.startswith("huge.csv line 3: invalid CSV: field larger than field limit")
        for text in (message,):
            assert "/tmp" not in text and "ragmeter-dataset" not in text
        stored = data(_dataset(http, "fine.jsonl", ok_line + ok_line), 201)
        assert data(http.get(f"/datasets/{stored['name']}/rows"))["total"] == 2
        names = {d["name"] for d in data(http.get("/datasets"))["items"]}
        assert "fine" in names and not names & {"deep", "nested", "latin", "huge"}


@pytest.mark.parametrize("name", ["x" * 300 + ".md", "folder/" + "y" * 300 + ".md"])
def test_upload_names_a_file_system_refuses_are_400s(service: ServiceProcess, name: str) -> None:
    with service.client() as http:
        message = failure(
            http.post("/knowledge/spaces/docs/documents", files=[("files", (name, b"# t\n"))]),
            400,
        )
        assert "longer than 255 bytes" in message
        message = failure(_dataset(http, name.replace(".md", ".jsonl"), b'{"query": "q"}\n'), 400)
        assert "longer than 255 bytes" in message
        files = [("files", ("a.md", b"# a\n")), ("files", ("a.md/b.md", b"# b\n"))]
        message = failure(http.post("/knowledge/spaces/docs/documents", files=files), 400)
        assert message.startswith("cannot store a.md/b.md") and "/tmp" not in message


def test_a_pdf_over_pypdfs_limits_is_a_4xx(service: ServiceProcess) -> None:
    with service.client() as http:
        response = http.post(
            "/knowledge/spaces/docs/documents",
            files=[("files", ("over.pdf", pypdf_limit_bomb()))],
        )
        message = failure(response, 422)
        assert message.startswith("over.pdf: the PDF is over pypdf's safety limits")
        assert "/tmp" not in response.text


def _leaks(text: str, *secrets: str) -> list[str]:
    markers = ["INSERT", "SELECT", "[SQL", "parameters", "sqlite", "Traceback", "/tmp", *secrets]
    return [m for m in markers if m in text]


def test_a_read_only_store_answers_500_without_sql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real store failure: the database opened read-only (the SQLite file, or the test's
    PostgreSQL database set to read-only transactions). The caller sees a reference; the
    SQL and its parameters go to the server's log under that reference."""
    home = tmp_path / "home"
    home.mkdir()
    if served := os.environ.get(STORE_URL_ENV):
        store = Store(served)
        with store.engine.begin() as connection:
            name = connection.exec_driver_sql("SELECT current_database()").scalar_one()
            connection.exec_driver_sql(
                f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'
            )
        store.close()
    else:
        Store(f"sqlite:///{home / 'ragmeter.db'}").close()  # migrated while writable
        url = f"sqlite:///file:{home / 'ragmeter.db'}?mode=ro&uri=true"
        (home / "ragmeter.toml").write_text(f'[store]\nurl = "{url}"\n', encoding="utf-8")
        monkeypatch.chdir(tmp_path)  # the store keeps files beside 'file:...', relative to here
    with ServiceProcess(home) as server, server.client() as http:
        prompt = {"code": "secret-code", "template": "{query} {context} {answer} PARAM-VALUE"}
        response = http.post("/prompts", json=prompt)
        message = failure(response, 500)
        assert message.startswith("internal error; reference ")
        assert not _leaks(response.text, "PARAM-VALUE", "secret-code", str(home))
        reference = message.removeprefix("internal error; reference ").split(",")[0]
    log = server.log.read_text(encoding="utf-8")
    assert f"reference {reference}" in log and "INSERT INTO prompts" in log


def test_a_broken_index_folder_answers_500_without_a_path(service: ServiceProcess) -> None:
    with service.client() as http:
        body = {"name": "broken", "embedder": "hashed"}
        space = data(http.post("/knowledge/spaces", json=body), 201)
        files = "ragmeter-files" if service.store_url.startswith("sqlite") else "files"
        folder = service.home / files / "spaces"  # beside the SQLite file, or in the home
        folder.mkdir(parents=True, exist_ok=True)
        (folder / str(space["id"])).write_text("not a folder", encoding="utf-8")
        response = http.post(
            "/knowledge/spaces/broken/documents", files=[("files", ("a.md", b"# a\n\ntext\n"))]
        )
        message = failure(response, 500)
        assert message.startswith("internal error; reference ")
        assert not _leaks(response.text, str(service.home), files)


def test_upstream_errors_name_the_endpoint_without_its_password(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    model = '[models.locked]\nbase_url = "http://alice:hunter2@127.0.0.1:9/v1"\nmodel = "e"\n'
    (home / "ragmeter.toml").write_text(model, encoding="utf-8")
    with ServiceProcess(home) as server, server.client() as http:
        data(http.post("/knowledge/spaces", json={"name": "s", "embedder": "locked"}), 201)
        response = http.post(
            "/knowledge/spaces/s/documents", files=[("files", ("a.md", b"# a\n\ntext\n"))]
        )
        message = failure(response, 502)
        assert "http://127.0.0.1:9/v1" in message
        assert "hunter2" not in response.text and "alice" not in response.text


def _agent_row(arguments: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ],
        "reference_tool_calls": [{"name": "f", "arguments": {}}],
    }


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (_raw_json(10_000), "nested deeper than 32 levels ([server] max_json_depth)"),
        (_raw_json(30), "nested deeper than 32 levels ([server] max_json_depth)"),
        ('{"n": ' + "9" * 2_000 + "}", "holds an integer of about 2,000 digits"),
    ],
)
def test_tool_call_arguments_that_nest_or_grow_inside_their_json_text_are_400s(
    service: ServiceProcess, arguments: str, says: str
) -> None:
    """A call's arguments arrive as JSON text, which the body's depth check sees as one
    string: the row reader parses it and holds it to the same limits."""
    body = {"scene_key": "dataset", "datasets": [_agent_row(arguments)],
            "evaluate_metrics": ["tool_call_f1"]}  # fmt: skip
    field = "field 'messages[1].tool_calls[0].function.arguments'"
    with service.client() as http:
        before = data(http.get("/evaluate/runs"))["total"]
        for path in ("/evaluate/runs", "/evaluate/evaluation"):
            message = failure(http.post(path, json=body), 400)
            assert field in message and says in message
        assert data(http.get("/evaluate/runs"))["total"] == before
        fine = {**body, "datasets": [_agent_row(_raw_json(20))]}
        run_id = data(http.post("/evaluate/runs", json=fine), 202)["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
