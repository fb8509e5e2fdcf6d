"""JSON carried inside a JSON string is held to the same limits as the body: the DB-GPT page's
``context`` sent as text, rows typed into its dataset form, and a CSV or JSON lines cell
holding JSON (an agent row's calls). Nesting past ``[server] max_json_depth`` is a 400 naming
it, at any depth (1,000 or 100,000 levels), and the server keeps answering."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.service import KEY, ServiceProcess

DEPTHS = (1_000, 100_000, 33)  # the attack's two, and just past the default of 32


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _list(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path_factory.mktemp("json-in-strings")) as started:
        yield started


def _page(server: ServiceProcess) -> httpx.Client:
    headers = {"Authorization": f"Bearer {KEY}"}
    return httpx.Client(base_url=f"{server.url}/api/v1/evaluate", headers=headers, timeout=120)


def _too_deep(response: httpx.Response) -> None:
    assert response.status_code == 400, (response.status_code, response.text[:500])
    body = response.json()
    assert body["success"] is False and "[server] max_json_depth" in body["err_msg"], body


def test_a_context_sent_as_text_is_held_to_the_depth_limit(server: ServiceProcess) -> None:
    with _page(server) as http:
        for depth in DEPTHS:
            body = {
                "datasets": "none",
                "scene_key": "recall",
                "scene_value": "s",
                "context": _nested(depth),
            }
            _too_deep(http.post("/start", json=body))
    assert httpx.get(f"{server.url}/health").status_code == 200


def test_rows_typed_into_the_page_are_held_to_the_depth_limit(server: ServiceProcess) -> None:
    with _page(server) as http:
        for depth in DEPTHS:
            row = '{"query": "q", "extra": ' + _list(depth) + "}"
            for content in (row, "[" + row + "]"):
                body = {"dataset_name": f"typed-{depth}", "content": content}
                _too_deep(http.post("/dataset/upload/content", json=body))


def test_a_cell_holding_json_is_held_to_the_depth_limit(server: ServiceProcess) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    for depth in DEPTHS:
        calls = _list(depth)
        jsonl = json.dumps({"query": "q", "reference_tool_calls": calls}) + "\n"
        # a CSV cell holds 131,072 characters at most (Python's csv module)
        csv = 'query,reference_tool_calls\nq,"' + _list(min(depth, 60_000)) + '"\n'
        for name, content in ((f"cell{depth}.jsonl", jsonl), (f"cell{depth}.csv", csv)):
            upload = {"file": (name, content.encode(), "text/plain")}
            answer = httpx.post(
                f"{server.base}/datasets", files=upload, headers=headers, timeout=120
            )
            _too_deep(answer)
    assert httpx.get(f"{server.url}/health").status_code == 200


def test_a_response_read_as_json_by_a_metric_is_no_crash(server: ServiceProcess) -> None:
    """DB-GPT's AppLinkMetric reads a row's response as JSON: one nested 100,000 deep scores
    as "not JSON it can read", and the other rows of the run score."""
    rows = [
        {"query": "q1", "response": _nested(100_000), "retrieved_contexts": ["a"]},
        {"query": "q2", "response": '{"app_name": "a"}', "retrieved_contexts": ["a"]},
    ]
    body = {"scene_key": "dataset", "evaluate_metrics": ["AppLinkMetric"], "datasets": rows}
    headers = {"Authorization": f"Bearer {KEY}"}
    answer = httpx.post(
        f"{server.base}/evaluate/evaluation", json=body, headers=headers, timeout=120
    )
    assert answer.status_code == 200, answer.text[:500]
    (deep,), (plain,) = answer.json()["data"]
    assert deep["score"] == 0.0 and "nested" in deep["feedback"]  # scored, not failed
    assert plain["score"] == 1.0
