"""Attacker's tests, specs and the lists and texts they reach (issue 11, round 2): metric
specs parse in linear time and are capped; object parameters cannot come from a spec; no
template copies a field twice and no oversized judge prompt is sent; huge integers in rows
are 400s; JSON depth is checked for every body FastAPI parses as JSON; lists and "not found"
messages are bounded. Each runs against a real ``ragmeter serve`` with a key."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from ragmeter.errors import ConflictError, NotFoundError
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store, open_store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, write_models
from tests.integration.service import ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores

HUGE = "9" * 5000  # past the 4,300 digits Python turns into an int or back into text


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


@pytest.fixture(scope="module")
def service(
    judge: ScriptedJudgeServer, tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("specs-home")
    write_models(home, judge.url)
    with ServiceProcess(home) as server:
        with server.client() as http:
            data(http.post("/knowledge/spaces", json={"name": "awel", "embedder": "hashed"}), 201)
            files = [("files", ("awel.md", GUIDE_AWEL.encode(), "text/markdown"))]
            data(http.post("/knowledge/spaces/awel/documents", files=files))
        yield server


def _inline(metrics: list[str], rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    rows = rows or [{"query": "q", "response": "a", "retrieved_contexts": ["c"]}]
    body = {"scene_key": "dataset", "datasets": rows, "evaluate_metrics": metrics}
    return {**body, "context": {"model": "scripted"}}


def _runs(http: httpx.Client) -> int:
    total: int = data(http.get("/evaluate/runs"))["total"]
    return total


# -- 1. metric specs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        "mrr(match=a" + " " * 40_000 + "b)",  # took 12 s of backtracking, blocking the server
        "AnswerRelevancyMetric(passing_score=3,prompt_template=" + "x" * 100_000 + ")",
        "mrr(match=overlap" + "," * 200 + ")",
    ],
)
def test_a_spec_over_200_characters_is_refused_before_any_work(
    service: ServiceProcess, spec: str
) -> None:
    with service.client() as http:
        before = _runs(http)
        message = failure(http.post("/evaluate/evaluation", json=_inline([spec])), 400)
        assert "at most 200 characters" in message and len(message) < 1_000
        assert _runs(http) == before  # nothing stored, not even one result carrying the spec


@pytest.mark.parametrize("k", ["9" * 5000, "99999999999", "0", "²", "1.5", "-3"])
def test_an_at_k_that_is_not_a_small_whole_number_is_a_400(service: ServiceProcess, k: str) -> None:
    spec = f"mrr@{k}"[:200]
    with service.client() as http:
        message = failure(http.post("/evaluate/evaluation", json=_inline([spec])), 400)
    assert "@k must be a whole number" in message or "max_top_k" in message


def test_a_spec_of_200_characters_still_works(service: ServiceProcess) -> None:
    spec = "RetrieverMRRMetric(match=" + "x" * 160 + ")"
    spec = spec[:199] + ")"
    rows = [{"query": "q", "retrieved_contexts": ["a b"], "reference_contexts": ["a b"]}]
    with service.client() as http:
        message = failure(http.post("/evaluate/evaluation", json=_inline([spec], rows)), 400)
        assert "match" in message  # parsed, then refused as an unknown way of matching
        found = data(http.post("/evaluate/evaluation", json=_inline(["mrr(match=overlap)"], rows)))
    assert found[0][0]["score"] == 1.0


# -- 2. object parameters -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "parameter"),
    [
        ("AnswerRelevancyMetric(judge=x)", "judge"),
        ("AnswerRelevancyMetric(judge=scripted)", "judge"),
        ("retrieval_similarity(embedder=hashed)", "embedder"),
    ],
)
def test_object_parameters_cannot_come_from_a_spec(
    service: ServiceProcess, spec: str, parameter: str
) -> None:
    with service.client() as http:
        before = _runs(http)
        message = failure(http.post("/evaluate/evaluation", json=_inline([spec])), 400)
        assert _runs(http) == before
    assert f"parameter '{parameter}' takes an object" in message


# -- 3. templates and judge prompts ---------------------------------------------------------


def test_a_template_repeating_a_field_is_refused_everywhere(service: ServiceProcess) -> None:
    template = "{query}{answer}" + "{context}" * 11_108  # 99,987 characters: under the size cap
    with service.client() as http:
        message = failure(http.post("/prompts", json={"code": "copy", "template": template}), 400)
        assert "{context} appears more than once" in message
        failure(http.get("/prompts/copy"), 404)
        spec = "AnswerRelevancyMetric(prompt_template={query}{answer}{context}{context})"
        message = failure(http.post("/evaluate/evaluation", json=_inline([spec])), 400)
        assert "{context} appears more than once" in message


def test_a_judge_prompt_over_the_cap_is_the_rows_failure_and_never_sent(
    service: ServiceProcess, judge: ScriptedJudgeServer
) -> None:
    rows = [
        {"query": "long", "response": "a", "retrieved_contexts": ["compost " * 60_000] * 3},
        {"query": "short", "response": "a", "retrieved_contexts": ["compost heaps"]},
    ]
    with service.client() as http:
        judge.reset()
        response = http.post("/evaluate/evaluation", json=_inline(["AnswerRelevancyMetric"], rows))
        found = data(response)
        run_id = response.headers["X-Ragmeter-Run-Id"]
        stored = data(http.get(f"/evaluate/runs/{run_id}/results"))["items"]
    long, short = found[0][0], found[1][0]
    assert long["score"] is None and "1,000,000 characters per judge prompt" in long["error"]
    assert short["score"] is not None
    assert judge.snapshot().get("chat_requests") == 1  # the long prompt never left the server
    kinds = {r["row_index"]: r["error_kind"] for r in stored}
    assert kinds == {0: "input", 1: None}


# -- 4. huge integers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "content", "where"),
    [
        ("ids.jsonl", '{"query": "a"}\n{"query": "q", "retrieved_ids": [' + HUGE + "]}\n",
         "ids.jsonl line 2 (row 1) field 'retrieved_ids'"),
        ("meta.json", '[{"query": "q", "metadata": {"n": -' + HUGE + "}}]",
         "meta.json (row 0) field 'metadata'"),
        ("hex.csv", 'query,retrieved_contexts\nq,"[0x' + "f" * 5000 + ']"\n',
         "hex.csv line 2 (row 0) field 'retrieved_contexts'"),
        ("ids.csv", 'query,retrieved_ids\nq,"[' + HUGE + ']"\n',
         "ids.csv line 2 (row 0) field 'retrieved_ids'"),
        ("meta.csv", 'query,metadata\nq,"{""n"": ' + HUGE + '}"\n',
         "meta.csv line 2 (row 0) field 'metadata'"),
    ],
)  # fmt: skip
def test_an_integer_too_long_to_print_is_a_400_naming_where(
    service: ServiceProcess, filename: str, content: str, where: str
) -> None:
    with service.client() as http:
        files = {"file": (filename, content.encode(), "application/octet-stream")}
        message = failure(http.post("/datasets", files=files), 400)
    assert where in message and "integer" in message, message
    assert HUGE[:100] not in message


def test_an_inline_row_with_a_huge_integer_is_a_400(service: ServiceProcess) -> None:
    body = json.dumps(_inline(["mrr"], [{"query": "q", "retrieved_ids": ["a"]}]))
    body = body.replace('["a"]', f'["a", {HUGE}]')
    with service.client() as http:
        before = _runs(http)
        response = http.post(
            "/evaluate/evaluation", content=body, headers={"Content-Type": "application/json"}
        )
        message = failure(response, 400)
        assert _runs(http) == before
    assert HUGE[:100] not in message


# -- 6. JSON depth --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form+json", "APPLICATION/JSON; charset=utf-8", "application/vnd.x+json"],
)
def test_every_body_fastapi_reads_as_json_has_its_depth_checked(
    service: ServiceProcess, content_type: str
) -> None:
    deep: Any = "x"
    for _ in range(40):  # over the default [server] max_json_depth = 32, under the row's 64
        deep = {"k": deep}
    body = _inline(["mrr"], [{"query": "q", "retrieved_ids": ["a"], "metadata": deep}])
    with service.client() as http:
        before = _runs(http)
        response = http.post(
            "/evaluate/evaluation",
            content=json.dumps(body),
            headers={"Content-Type": content_type},
        )
        message = failure(response, 400)
        assert "[server] max_json_depth" in message
        assert _runs(http) == before


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32"])
def test_a_json_body_in_utf16_cannot_hide_its_depth(service: ServiceProcess, encoding: str) -> None:
    """Python's JSON reader also takes UTF-16 and UTF-32, where a character such as U+2200
    (bytes 00 22 in UTF-16-LE) looks like a quote to a byte scan: bodies must be UTF-8."""
    deep: Any = "x"
    for _ in range(40):
        deep = {"k": deep}
    row = {"query": "q\u2200", "retrieved_ids": ["a"], "metadata": deep}
    body = json.dumps(_inline(["mrr"], [row]), ensure_ascii=False).encode(encoding)
    with service.client() as http:
        before = _runs(http)
        response = http.post(
            "/evaluate/evaluation", content=body, headers={"Content-Type": "application/json"}
        )
        assert "UTF-8" in failure(response, 415)
        assert _runs(http) == before


# -- 7. lists and "not found" messages --------------------------------------------------------


def test_not_found_messages_name_at_most_twenty(service: ServiceProcess) -> None:
    with service.client() as http:
        for i in range(25):
            prompt = {"code": f"p{i:02d}", "template": "{query}{context}{answer}"}
            data(http.post("/prompts", json=prompt), 201)
            files = {"file": (f"d{i:02d}.jsonl", b'{"query": "q"}\n', "application/json")}
            data(http.post("/datasets", files=files), 201)
        for path, last, first_hidden in (
            ("/prompts/nope", "p19", "p20"),
            ("/datasets/nope", "d19", "d20"),
        ):
            message = failure(http.get(path), 404)
            assert last in message and first_hidden not in message
            assert "and 5 more" in message, message
        for path in ("/prompts/", "/datasets/", "/evaluate/runs/", "/apps/"):
            message = failure(http.get(path + "z" * 5000), 404)
            assert "z" * 100 not in message and len(message) < 2000, (path, len(message))
        message = failure(http.post("/evaluate/runs/" + "r" * 5000 + "/cancel"), 404)
        assert "r" * 100 not in message


def test_lists_take_offset_and_limit_keeping_their_shape(service: ServiceProcess) -> None:
    with service.client() as http:
        for i in range(3):
            app = {"kind": "rag", "space": "awel", "model": "scripted"}
            data(http.post("/apps", json={"name": f"app{i}", "config": app}), 201)
            data(http.post("/knowledge/spaces", json={"name": f"s{i}", "embedder": "hashed"}), 201)
        files = [("files", (f"n{i}.md", b"# note\n\ntext\n", "text/markdown")) for i in range(3)]
        data(http.post("/knowledge/spaces/s0/documents", files=files))
        for path, names in (
            ("/apps", ["app0", "app1", "app2"]),
            ("/knowledge/spaces", ["awel", "s0", "s1", "s2"]),
            ("/knowledge/spaces/s0/documents", ["n0.md", "n1.md", "n2.md"]),
        ):
            everything = data(http.get(path))
            assert isinstance(everything, list)
            assert [item["name"] for item in everything] == names
            page = data(http.get(path, params={"offset": 1, "limit": 2}))
            assert [item["name"] for item in page] == names[1:3]
            for bad in ({"limit": 1001}, {"limit": 0}, {"offset": -1}):
                assert not http.get(path, params=bad).json()["success"]
        prompts = data(http.get("/prompts", params={"offset": 2, "limit": 3}))
        assert isinstance(prompts, list) and len(prompts) <= 3
        codes = [p["code"] for p in data(http.get("/prompts"))]
        assert [p["code"] for p in prompts] == codes[2:5]
        assert len(data(http.get("/prompts", params={"limit": 1000}))) == len(codes)


# -- 5. dataset rows read only where used ----------------------------------------------------


def _statements(store: Store) -> tuple[list[tuple[str, Any]], Callable[[], None]]:
    """Every (SQL, parameters) the store's engine sends from now on, and how to stop."""
    sent: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_args: Any) -> None:
        sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", seen)
    return sent, lambda: event.remove(store.engine, "before_cursor_execute", seen)


def test_listing_and_finding_datasets_never_reads_their_rows(store_url: str) -> None:
    """Rows live in ``dataset_rows``: listing, finding and counting datasets send no
    statement that touches that table, whatever the datasets hold."""
    store = open_store(store_url)
    runs = RunStore(store)
    marker = "compost-" + "x" * 1000
    for i in range(3):
        runs.add_dataset([{"query": f"{marker} {j}"} for j in range(50)], name=f"big{i}")
    sent, stop = _statements(store)
    try:
        found, total = runs.datasets(0, 10)
        one = runs.dataset("big1")
        by_id = runs.dataset(str(one.id))
        with pytest.raises(NotFoundError):
            runs.dataset("nope")
    finally:
        stop()
    assert total == 3 and [d.row_count for d in found] == [50, 50, 50]
    assert by_id.name == "big1"
    assert any("FROM datasets" in statement for statement, _ in sent)  # the listener heard
    assert not [s for s, _ in sent if "dataset_rows" in s], sent
    assert next(runs.iter_dataset_rows("big1"))["query"] == f"{marker} 0"  # where rows are used
    store.close()


def _values(parameters: Any) -> tuple[Any, ...]:
    """A statement's parameter values in order: SQLite's are a tuple, psycopg's a dict."""
    return tuple(parameters.values() if isinstance(parameters, dict) else parameters)


def _plan(store: Store, statement: str, parameters: Any) -> str:
    with store.engine.connect() as connection:
        found = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
        return " ".join(str(row[-1]) for row in found)


def test_a_page_of_dataset_rows_reads_only_that_page(store_url: str) -> None:
    """``GET /datasets/{name}/rows`` reads one range of ``dataset_rows``' primary key: a
    single statement, searched by (dataset, position) with no scan, gives the page in order."""
    store = open_store(store_url)
    runs = RunStore(store)
    rows = [
        {"query": f"q{i}", "metadata": {"n": i, "mixed": [1, 2.5, None, "é"]}} for i in range(300)
    ]
    runs.add_dataset([{"query": "other"}] * 20, name="before")
    runs.add_dataset(rows, name="big")
    sent, stop = _statements(store)
    try:
        page = runs.dataset_rows("big", 120, 7)
    finally:
        stop()
    assert page == rows[120:127]
    reads = [(s, p) for s, p in sent if "dataset_rows" in s]
    assert len(reads) == 1, sent
    statement, parameters = reads[0]
    assert _values(parameters)[-2:] == (120, 127)
    if store.engine.dialect.name == "sqlite":  # PostgreSQL plans by its tables' statistics
        plan = _plan(store, statement, parameters)
        assert "SEARCH dataset_rows USING" in plan and "position>? AND position<?" in plan, plan
        assert "SCAN" not in plan and "TEMP B-TREE" not in plan, plan  # no scan, no sort
    assert runs.dataset_rows("big", 295, 100) == rows[295:]
    assert runs.dataset_rows("big", 400, 10) == []
    odd = [{"query": "q", "metadata": {"x": math.nan, "y": [-math.inf, 1.5]}}]
    runs.add_dataset(odd, name="odd")  # stored as standard JSON
    assert runs.dataset_rows("odd", 0, 10)[0]["metadata"] == {"x": None, "y": [None, 1.5]}
    wide = [{"query": f"q{i}", "pad": "p" * 1_000_000} for i in range(10)]
    runs.add_dataset(wide, name="wide")
    page = runs.dataset_rows("wide", 0, 1000, max_bytes=3_000_000)
    assert [row["query"] for row in page] == ["q0", "q1", "q2"]  # the third passes 3 MB
    store.close()


def test_a_dataset_is_read_in_order_a_batch_at_a_time(store_url: str) -> None:
    """A run reads its dataset in batches, each a range query; nothing is written when a
    dataset cannot be stored whole (a taken name, rows that fail while being written)."""
    store = open_store(store_url)
    runs = RunStore(store)
    rows = [{"query": f"q{i}"} for i in range(4_321)]  # more than one INSERT batch
    record = runs.add_dataset(iter(rows), name="many")  # a generator is read once
    assert record.row_count == len(rows)
    with pytest.raises(NotFoundError):
        runs.iter_dataset_rows("nope")  # at once, not at the first row
    sent, stop = _statements(store)
    try:
        read = list(runs.iter_dataset_rows("many", batch=500))
    finally:
        stop()
    assert read == rows
    reads = [_values(p)[-2:] for s, p in sent if "dataset_rows" in s]
    assert reads == [(start, start + 500) for start in range(0, 4_500, 500)]

    def failing() -> Iterator[dict[str, Any]]:
        yield from rows
        raise ValueError("the source broke")

    with pytest.raises(ValueError, match="the source broke"):
        runs.add_dataset(failing(), name="half")
    with pytest.raises(ConflictError):
        runs.add_dataset(rows[:5], name="many")
    with store.engine.connect() as connection:
        count = connection.exec_driver_sql("SELECT count(*) FROM dataset_rows").scalar()
    assert count == len(rows)  # neither failure left a row behind
    assert runs.add_dataset(rows[:5], name="half").row_count == 5  # the name is still free
    store.close()


# -- 8. the token cache ----------------------------------------------------------------------


def test_token_sets_are_not_kept_after_a_call() -> None:
    """Overlap matching tokenises each text once per call and keeps nothing afterwards: a
    request's many short texts (each costs far more memory than its characters) cannot pin
    memory in the server across runs."""
    import tracemalloc

    from ragmeter.metrics.retrieval import _judge

    texts = [[f"{chr(0x4E00 + i % 20000)}{i}"] for i in range(50_000)]  # short, distinct
    references = [["一"] for _ in texts]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        judged = _judge.judge_overlap(texts, references)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del judged
    assert kept < 8_000_000, kept  # the result's arrays only; the token sets were ~30 MB
