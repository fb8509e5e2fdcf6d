"""The DB-GPT-compatible evaluation route, with the seed's own recall and app examples, sent
with curl and with our client to a real ``ragmeter serve`` on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ragmeter.client import AsyncClient, Client, ClientError, EvaluateServeRequest, run_evaluation
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, NOTES_AWEL, TEA, json_lines, run, write_models
from tests.integration.service import KEY, ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores

RECALL_METRICS = ["RetrieverHitRateMetric", "RetrieverMRRMetric", "RetrieverSimilarityMetric"]
JUDGE_PROMPT = (  # the walkthrough's judge.txt (docs/how-to/evaluate-rag-app.md)
    "Score the answer from 0 (unsupported, off the question) to 5 (fully backed by the context,\n"
    "answers the question). Reply with the score on the first line, then one line of reasons.\n\n"
    "Question:\n{query}\n\nContext:\n{context}\n\nAnswer:\n{answer}\n"
)


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer(latency_ms=20) as server:
        yield server


class _NotFound(BaseHTTPRequestHandler):
    """An endpoint with no such model: every request is a 404."""

    def do_POST(self) -> None:
        body = b'{"error": {"message": "model not found"}}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def lost_judge() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory,
    store_kind: str,
    judge: ScriptedJudgeServer,
    lost_judge: str,
) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("service-home")
    write_models(home, judge.url)
    with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
        config.write(f'\n[models.lost]\nbase_url = "{lost_judge}"\nmodel = "gone"\n')
    with ServiceProcess(home) as server:
        docs = tmp_path_factory.mktemp("docs")
        (docs / "awel.md").write_text(GUIDE_AWEL, encoding="utf-8")
        (docs / "notes.md").write_text(NOTES_AWEL, encoding="utf-8")
        (docs / "tea.md").write_text(TEA, encoding="utf-8")
        with server.client() as http:
            data(http.post("/knowledge/spaces", json={"name": "awel", "embedder": "hashed"}), 201)
            files = [("files", (p.name, p.read_bytes(), "text/markdown")) for p in docs.iterdir()]
            added = data(http.post("/knowledge/spaces/awel/documents", files=files))
            assert sorted(added["added"]) == ["awel.md", "notes.md", "tea.md"]
            prompt = {"code": "relevance", "template": JUDGE_PROMPT, "kind": "judge"}
            data(http.post("/prompts", json=prompt), 201)
            app = {
                "name": "awel-bot",
                "config": {"kind": "rag", "space": "awel", "model": "scripted"},
            }
            data(http.post("/apps", json=app), 201)
        yield server


def _space_id(service: ServiceProcess) -> int:
    with service.client() as http:
        space: dict[str, Any] = data(http.get("/knowledge/spaces/awel"))
        return int(space["id"])


def _curl(url: str, body: dict[str, Any], key: str | None = KEY) -> tuple[int, dict[str, str], Any]:
    """POST with curl as the seed does; (status, headers, JSON body)."""
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    args = ["curl", "-s", "-i", "--location", "--request", "POST", url]
    args += ["--header", "Content-Type: application/json", "-d", json.dumps(body)]
    if key:
        args += ["--header", f"Authorization: Bearer {key}"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True).stdout
    head, _, payload = out.partition("\n\n")  # text mode turned CRLF into LF
    lines = head.splitlines()
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, json.loads(payload)


def _recall_request(space: str | int, top_k: int = 5) -> dict[str, Any]:
    return {
        "scene_key": "recall",
        "scene_value": str(space),
        "context": {"top_k": top_k},
        "evaluate_metrics": RECALL_METRICS,
        "datasets": [{"query": "what awel talked about", "doc_name": "awel.md"}],
    }


def _check_recall(rows: list[list[dict[str, Any]]], top_k: int) -> None:
    assert len(rows) == 1 and [r["metric_name"] for r in rows[0]] == RECALL_METRICS
    for result in rows[0]:
        assert set(result) >= {
            "prediction", "contexts", "score", "passing", "metric_name",
            "prediction_cost", "query", "raw_dataset", "feedback",
        }  # fmt: skip
        assert result["query"] == "what awel talked about"
        assert result["raw_dataset"]["doc_name"] == "awel.md"
        assert 0.0 <= result["score"] <= 1.0
        assert len(result["prediction"]) == top_k  # context.top_k is honoured
    hit, mrr, _similarity = rows[0]
    assert hit["score"] == 1.0 and mrr["score"] > 0  # awel.md's chunks are retrieved


def test_seed_recall_example_with_curl(service: ServiceProcess) -> None:
    url = f"{service.base}/evaluate/evaluation"
    status, headers, body = _curl(url, _recall_request(_space_id(service)))
    assert status == 200 and body["success"] is True and body["err_code"] is None
    _check_recall(body["data"], top_k=5)
    run_id = headers["x-ragmeter-run-id"]
    with service.client() as http:  # the compat route stored its run
        run = data(http.get(f"/evaluate/runs/{run_id}"))
    assert run["state"] == "done" and run["progress"] == {"done": 1, "total": 1}
    assert set(run["summary"]) == set(RECALL_METRICS)


def test_top_k_is_honoured_and_v1_path_works(service: ServiceProcess) -> None:
    url = f"{service.url}/api/v1/evaluate/evaluation"
    status, _headers, body = _curl(url, _recall_request("awel", top_k=2))
    assert status == 200, body
    _check_recall(body["data"], top_k=2)


def test_seed_recall_example_with_our_client(service: ServiceProcess) -> None:
    request = EvaluateServeRequest(**_recall_request(_space_id(service)))
    with Client(api_base=service.api, api_key=KEY) as client:
        rows = asyncio.run(run_evaluation(client, request=request))
    _check_recall(rows, top_k=5)

    async def with_async_client() -> list[list[dict[str, Any]]]:
        async with AsyncClient(api_base=service.api, api_key=KEY) as client:
            return await run_evaluation(client, request)

    _check_recall(asyncio.run(with_async_client()), top_k=5)


def _app_request(
    top_k: int = 5, parallel: int | None = None, rows: int = 1, tag: str = ""
) -> dict[str, Any]:
    queries = ["what awel talked about", "what layers does AWEL have", "how to brew green tea"]
    return {
        "scene_key": "app",
        "scene_value": "awel-bot",
        "context": {"top_k": top_k, "prompt": "relevance", "model": "scripted"},
        "evaluate_metrics": ["AnswerRelevancyMetric"],
        "datasets": [
            {
                "query": queries[i % len(queries)] + tag + ("" if i < 3 else f" ({i})"),
                "doc_name": "awel.md",
            }
            for i in range(rows)
        ],
        "parallel_num": parallel,
    }


def test_seed_app_example_with_curl_and_client(service: ServiceProcess) -> None:
    status, _headers, body = _curl(f"{service.base}/evaluate/evaluation", _app_request())
    assert status == 200, body
    (result,) = body["data"][0]
    assert result["metric_name"] == "AnswerRelevancyMetric"
    assert result["score"] is not None and 0 <= result["score"] <= 5, result
    assert result["prediction"] and result["contexts"]  # the app's answer and its contexts
    assert "answer sentences are backed by the context" in result["feedback"]  # judged
    with Client(api_base=service.api, api_key=KEY) as client:
        rows = client.evaluate(_app_request())
    assert rows[0][0]["score"] == result["score"]  # same answer, judged the same way


def test_parallel_num_bounds_the_work_in_flight(
    service: ServiceProcess, judge: ScriptedJudgeServer
) -> None:
    with service.client() as http:
        judge.reset()
        data(
            http.post(
                "/evaluate/evaluation", json=_app_request(parallel=1, rows=6, tag=" [serial]")
            )
        )
        serial = judge.snapshot()["max_in_flight"]
        judge.reset()
        data(
            http.post("/evaluate/evaluation", json=_app_request(parallel=6, rows=12, tag=" [wide]"))
        )
        wide = judge.snapshot()["max_in_flight"]
    assert (serial, wide > 1) == (1, True), (serial, wide)


@pytest.mark.parametrize(
    ("change", "status", "names"),
    [
        ({"scene_key": None}, 400, "scene_key"),
        ({"scene_key": "chat"}, 400, "scene_key"),
        ({"scene_value": "nope"}, 404, "nope"),
        ({"evaluate_metrics": []}, 400, "evaluate_metrics"),
        ({"evaluate_metrics": ["NoSuchMetric"]}, 400, "NoSuchMetric"),
        ({"context": {"top_k": "many"}}, 400, "context.top_k"),
        ({"context": {"topk": 5}}, 400, "topk"),
        ({"parallel_num": "x"}, 422, "parallel_num"),
        ({"parallel_num": 0}, 400, "parallel_num"),
        ({"datasets": [{"doc_name": "awel.md"}]}, 400, "query"),
        ({"datasets": [{"query": "q", "doc_name": "nope.md"}]}, 400, "doc_name"),
        ({"datasets": None}, 400, "datasets"),
        ({"unknown_field": 1}, 422, "unknown_field"),
    ],
)
def test_bad_requests_name_the_field(
    service: ServiceProcess, change: dict[str, Any], status: int, names: str
) -> None:
    body = {**_recall_request("awel"), **change}
    with service.client() as http:
        message = failure(http.post("/evaluate/evaluation", json=body), status)
    assert names in message


def test_client_error_carries_status_and_message(service: ServiceProcess) -> None:
    request = {**_recall_request("missing-space")}
    with Client(api_base=service.api, api_key=KEY) as client, pytest.raises(ClientError) as err:
        asyncio.run(run_evaluation(client, request))
    assert err.value.status == 404 and "missing-space" in err.value.message
    with Client(api_base=service.api, api_key="wrong") as client, pytest.raises(ClientError) as bad:
        client.evaluate(_recall_request("awel"))
    assert bad.value.status == 401


def test_scenes_and_metrics(service: ServiceProcess) -> None:
    with service.client() as http:
        scenes = data(http.get("/evaluate/scenes"))
        metrics = data(http.get("/evaluate/metrics"))
        recall = data(http.get("/evaluate/metrics", params={"scene_key": "recall"}))
    assert {s["scene_key"] for s in scenes} == {"recall", "app", "dataset"}
    names = {m["name"] for m in metrics}
    assert set(RECALL_METRICS) | {"AnswerRelevancyMetric"} <= names
    assert all(m["description"] for m in metrics)
    assert "AnswerRelevancyMetric" not in {m["name"] for m in recall}


def test_dataset_scene_rows_carry_predictions(service: ServiceProcess) -> None:
    body = {
        "scene_key": "dataset",
        "evaluate_metrics": ["RetrieverHitRateMetric", "RetrieverMRRMetric"],
        "datasets": [
            {"query": "q1", "retrieved_contexts": ["a", "b"], "reference_contexts": ["b"]},
            {"query": "q2", "retrieved_contexts": ["a", "b"], "reference_contexts": ["a"]},
            {"query": "q3", "retrieved_contexts": ["a", "b"], "reference_contexts": ["c"]},
        ],
        "parallel_num": 1,
    }
    with service.client() as http:
        response = http.post("/evaluate/evaluation", json=body)
        rows = data(response)
        base = response.headers["x-ragmeter-run-id"]
        better = [
            {**row, "retrieved_contexts": row["reference_contexts"]} for row in body["datasets"]
        ]
        other = http.post("/evaluate/evaluation", json={**body, "datasets": better})
        path = f"/evaluate/runs/{base}/compare/{other.headers['x-ragmeter-run-id']}"
        comparison = data(http.get(path))
        strict = failure(http.get(path, params={"alpha": 1.5}), 422)
    assert [[r["score"] for r in row] for row in rows] == [[1.0, 0.5], [1.0, 1.0], [0.0, 0.0]]
    hit, mrr = comparison
    assert (mrr["metric_name"], mrr["paired"], mrr["better"], mrr["same"]) == (
        "RetrieverMRRMetric", 3, 2, 1,
    )  # fmt: skip
    assert mrr["delta"] == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert hit["delta"] == pytest.approx(1 / 3)
    # mrr's non-zero differences 0.5 and 1.0: 2 of 4 sign patterns reach |1.5|; Bonferroni
    # doubles each p of the two metrics, capped at 1 (hit rate: one difference, p = 1)
    assert (mrr["p_value"], mrr["p_method"], mrr["p_adjusted"]) == (0.5, "exact", 1.0)
    assert (hit["p_value"], hit["p_adjusted"], hit["verdict"]) == (1.0, 1.0, "no_evidence")
    assert (mrr["ci_method"], mrr["verdict"], mrr["paired_by"]) == (
        "percentile", "no_evidence", "query",
    )  # fmt: skip
    assert (mrr["correction"], mrr["family"], mrr["ci_level"]) == ("bonferroni", 2, 0.975)
    assert mrr["small_sample"] and mrr["ci_note"] == (
        "interval not informative: 3 values (fewer than 30)"
    )
    assert (mrr["base_unpaired"], mrr["other_unpaired"]) == (0, 0)
    assert "fewer than 10 pairs" in mrr["note"]
    assert "alpha" in strict


def test_models_lists_names_only(service: ServiceProcess) -> None:
    with service.client() as http:
        models = data(http.get("/models"))
    assert models == [{"name": "hashed"}, {"name": "lost"}, {"name": "scripted"}]
    assert "base_url" not in json.dumps(models)


def test_cli_eval_runs_on_the_server(
    service: ServiceProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"query": "what awel talked about", "doc_name": "awel.md"}\n'
        '{"query": "AWEL operators", "doc_name": "notes.md"}\n',
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    monkeypatch.setenv("RAGMETER_API_KEY", KEY)
    args = ["eval", str(rows), "-m", "hit_rate,mrr", "--space", "awel"]
    args += ["--retriever", "vector,bm25", "--server", service.url, "--out", str(out)]
    done = run(*args, home=tmp_path / "client-home")  # nothing local: the server has it all
    assert done.returncode == 0, done.stderr
    assert "vector" in done.stdout and "bm25" in done.stdout and "server run:" in done.stdout
    lines = json_lines(out.read_text(encoding="utf-8"))
    assert len(lines) == 2 * 2 * 2 and {line["retriever"] for line in lines} == {"vector", "bm25"}
    assert all(line["score"] is not None for line in lines)
    refused = run(*args, "--judge-base-url", "http://x", home=tmp_path / "client-home")
    assert refused.returncode == 2 and "--judge-base-url is not available" in refused.stderr
    run_id = next(
        line.split()[-1] for line in done.stdout.splitlines() if line.startswith("server run:")
    )
    # the command line sees the server's runs (same store): results print as JSON lines
    for extra in ((), ("--out", "-")):
        printed = run("runs", "results", run_id, *extra, home=service.home, env=service.store_env)
        assert printed.returncode == 0, printed.stderr
        lines = json_lines(printed.stdout)
        assert len(lines) == 2 * 2 and {x["metric_name"] for x in lines} == {"hit_rate", "mrr"}
    shown = run("runs", "show", run_id, home=service.home, env=service.store_env)
    assert "vector@5 on" in shown.stdout  # the recall scene's default cut-off is in the title


@pytest.mark.parametrize("key", [None, "wrong"])
def test_cli_eval_on_the_server_says_which_variable_holds_the_key(
    service: ServiceProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str | None
) -> None:
    """The server reads $RAGMETER_API_KEYS; the command line sends $RAGMETER_API_KEY."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"query": "q", "retrieved_ids": ["a"], "reference_ids": ["a"]}\n')
    monkeypatch.delenv("RAGMETER_API_KEYS", raising=False)
    if key is None:
        monkeypatch.delenv("RAGMETER_API_KEY", raising=False)
    else:
        monkeypatch.setenv("RAGMETER_API_KEY", key)
    result = run("eval", str(rows), "-m", "mrr", "--server", service.url, home=tmp_path / "h")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    given = "is not set" if key is None else "holds a key the server refused"
    assert f"$RAGMETER_API_KEY {given}: set $RAGMETER_API_KEY to one of the server's keys" in line
    assert service.url in line


def test_compare_of_runs_sharing_no_query_is_a_400(service: ServiceProcess) -> None:
    def request(query: str) -> dict[str, Any]:
        row = {"query": query, "retrieved_contexts": ["a"], "reference_contexts": ["a"]}
        return {"scene_key": "dataset", "evaluate_metrics": ["mrr"], "datasets": [row]}

    with service.client() as http:
        base = http.post("/evaluate/evaluation", json=request("only in the base run"))
        other = http.post("/evaluate/evaluation", json=request("only in the other run"))
        ids = [r.headers["x-ragmeter-run-id"] for r in (base, other)]
        message = failure(http.get(f"/evaluate/runs/{ids[0]}/compare/{ids[1]}"), 400)
    assert "share no scored query" in message and "query text" in message


def test_re_adding_a_prompt_names_the_replace_field(service: ServiceProcess) -> None:
    prompt = {"code": "relevance", "template": JUDGE_PROMPT, "kind": "judge"}
    with service.client() as http:
        message = failure(http.post("/prompts", json=prompt), 409)
        assert (
            message == "prompt 'relevance' already exists; send \"replace\": true to overwrite it"
        )
        same = data(http.post("/prompts", json={**prompt, "replace": True}), 201)
        edited = {**prompt, "template": "Version two. " + JUDGE_PROMPT, "replace": True}
        newer = data(http.post("/prompts", json=edited), 201)
        older = data(http.get(f"/prompts/relevance@{same['version']}"), 200)
        missing = failure(http.get(f"/prompts/relevance@{newer['version'] + 1}"), 404)
        data(http.post("/prompts", json={**prompt, "replace": True}), 201)  # as the others use it
    assert newer["version"] == same["version"] + 1  # the same text again made no version
    assert older["template"] == JUDGE_PROMPT and older["version"] == same["version"]
    assert "no prompt 'relevance@" in missing


def test_a_run_whose_judge_fails_for_good_answers_502_and_stays_resumable(
    service: ServiceProcess,
) -> None:
    body = _app_request(rows=2, tag=" [lost]")
    body["context"] = {**body["context"], "model": "lost"}
    with service.client() as http:
        response = http.post("/evaluate/evaluation", json=body)
        message = failure(response, 502)
        run_id = response.headers["x-ragmeter-run-id"]
        assert run_id in message and "resume" in message
        run = data(http.get(f"/evaluate/runs/{run_id}"))
    assert (run["state"], run["error_kind"], run["resumable"]) == ("failed", "upstream", True)
    assert run["progress"]["done"] == 0  # nothing judged, nothing stored as if it were
