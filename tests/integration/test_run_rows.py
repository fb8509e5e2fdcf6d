"""A run's rows and score distributions over a real ``ragmeter serve``: sorted by row or by a
metric's score, failures first, below a threshold, text in queries and responses (Chinese
included), paged; bad parameters answered 4xx naming the parameter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.metrics.retrieval.ranking import NO_RELEVANT_REASON
from tests.integration.service import ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

#: 12 rows: hit_rate 1 when the reference is "a" or "b" (rank 1 or 2, so mrr 1 or 0.5), 0 for
#: "z", null (no reference) every fourth row
ROWS = [
    {
        "query": f"question {i}" + (" 安装步骤" if i == 5 else ""),
        "response": f"answer {i}" + (" 数据库迁移" if i == 7 else ""),
        "retrieved_ids": ["a", "b", "c"],
        "reference_ids": [] if i % 4 == 3 else [["a", "b", "z"][i % 3]],
    }
    for i in range(12)
]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, str]]:
    home = tmp_path_factory.mktemp("run-rows")
    with ServiceProcess(home, keys=None) as process, process.client(None) as http:
        body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in ROWS).encode()
        files = {"file": ("rows.jsonl", body, "application/x-ndjson")}
        data(http.post("/datasets", params={"name": "rows"}, files=files), 201)
        started = http.post(
            "/evaluate/runs",
            json={
                "scene_key": "dataset",
                "datasets_name": "rows",
                "evaluate_metrics": ["hit_rate", "mrr"],
            },
        )
        run_id = data(started, 202)["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
        yield process, run_id


def _rows(http: httpx.Client, run_id: str, **params: Any) -> dict[str, Any]:
    page: dict[str, Any] = data(http.get(f"/evaluate/runs/{run_id}/rows", params=params))
    return page


def _indexes(page: dict[str, Any]) -> list[int]:
    return [row["row_index"] for row in page["items"]]


def _hit(i: int) -> float | None:
    return None if i % 4 == 3 else (0.0 if i % 3 == 2 else 1.0)


def _mrr(i: int) -> float | None:
    return None if i % 4 == 3 else [1.0, 0.5, 0.0][i % 3]


def test_rows_in_row_order_with_every_metric(server: tuple[ServiceProcess, str]) -> None:
    process, run_id = server
    with process.client(None) as http:
        page = _rows(http, run_id)
        assert page["total"] == 12 and _indexes(page) == list(range(12))
        first = page["items"][1]
        assert first["query"] == "question 1" and "answer 1" in first["response"]
        assert first["scores"]["mrr"]["score"] == 0.5
        assert first["scores"]["hit_rate"]["score"] == 1.0
        null = page["items"][3]["scores"]["hit_rate"]
        assert null["score"] is None and null["error"] == NO_RELEVANT_REASON
        assert null["error_kind"] == "input"
        assert _indexes(_rows(http, run_id, order="desc")) == list(range(11, -1, -1))
        paged = _rows(http, run_id, offset=10, limit=5)
        assert paged["total"] == 12 and _indexes(paged) == [10, 11]


def test_sorting_by_a_metric_puts_nulls_last(server: tuple[ServiceProcess, str]) -> None:
    process, run_id = server
    scored = [i for i in range(12) if _mrr(i) is not None]
    nulls = [i for i in range(12) if _mrr(i) is None]
    with process.client(None) as http:
        up = _indexes(_rows(http, run_id, metric="mrr", sort="score"))
        assert up == sorted(scored, key=lambda i: (_mrr(i), i)) + nulls
        down = _indexes(_rows(http, run_id, metric="mrr", sort="score", order="desc"))
        assert down == sorted(scored, key=lambda i: (-(_mrr(i) or 0), i)) + nulls


def test_failures_first_and_below(server: tuple[ServiceProcess, str]) -> None:
    process, run_id = server
    with process.client(None) as http:
        first = _indexes(_rows(http, run_id, failures_first="true"))
        # retrieval metrics have no pass mark: a failure is a null score
        assert first == [3, 7, 11] + [i for i in range(12) if i % 4 != 3]
        below = _rows(http, run_id, metric="hit_rate", below=0.5)
        assert _indexes(below) == [i for i in range(12) if _hit(i) == 0.0]
        assert below["total"] == len(below["items"])


def test_text_search_in_queries_and_responses(server: tuple[ServiceProcess, str]) -> None:
    process, run_id = server
    with process.client(None) as http:
        assert _indexes(_rows(http, run_id, q="安装")) == [5]  # in the query
        assert _indexes(_rows(http, run_id, q="数据库")) == [7]  # in the response
        assert _indexes(_rows(http, run_id, q="ANSWER 1")) == [1, 10, 11]
        assert _rows(http, run_id, q="100%_")["total"] == 0  # wildcards are text


def test_distribution_counts_scores_and_null_reasons(server: tuple[ServiceProcess, str]) -> None:
    process, run_id = server
    with process.client(None) as http:
        found = {
            d["metric_name"]: d for d in data(http.get(f"/evaluate/runs/{run_id}/distribution"))
        }
        mrr = found["mrr"]
        assert len(mrr["edges"]) == 11 and mrr["edges"][0] == 0.0 and mrr["edges"][-1] == 1.0
        values = [_mrr(i) for i in range(12) if _mrr(i) is not None]
        assert mrr["counts"][0] == values.count(0.0)
        assert mrr["counts"][5] == values.count(0.5) and mrr["counts"][9] == values.count(1.0)
        assert sum(mrr["counts"]) == len(values)
        assert mrr["nulls"] == [{"error_kind": "input", "reason": NO_RELEVANT_REASON, "count": 3}]
        assert mrr["other_nulls"] == 0
        five = data(http.get(f"/evaluate/runs/{run_id}/distribution", params={"bins": 5}))
        assert all(len(d["counts"]) == 5 for d in five)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"sort": "random"}, "sort"),
        ({"order": "up"}, "order"),
        ({"metric": "nope"}, "metric"),
        ({"sort": "score"}, "metric"),
        ({"below": "0.5"}, "metric"),
        ({"metric": "mrr", "below": "nan"}, "below"),
        ({"metric": "mrr", "below": "low"}, "below"),
        ({"q": "x" * 201}, "q"),
        ({"limit": 1001}, "limit"),
        ({"offset": -1}, "offset"),
        ({"failures_first": "maybe"}, "failures_first"),
    ],
)
def test_bad_parameters_are_4xx_naming_them(
    server: tuple[ServiceProcess, str], params: dict[str, Any], named: str
) -> None:
    process, run_id = server
    with process.client(None) as http:
        response = http.get(f"/evaluate/runs/{run_id}/rows", params=params)
        assert 400 <= response.status_code < 500, response.text
        assert named in failure(response, response.status_code)


def test_bad_bins_and_unknown_runs(server: tuple[ServiceProcess, str], tmp_path: Path) -> None:
    process, run_id = server
    with process.client(None) as http:
        for bins in (0, 51):
            response = http.get(f"/evaluate/runs/{run_id}/distribution", params={"bins": bins})
            assert "bins" in failure(response, 422)
        assert "no run" in failure(http.get("/evaluate/runs/nope/rows"), 404)
        assert "no run" in failure(http.get("/evaluate/runs/nope/distribution"), 404)
