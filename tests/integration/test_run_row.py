"""One row of a run over a real ``ragmeter serve`` with the scripted judge: the results API and
the Row route return the judge's reasoning (``details``) stored as each row was scored, the
retrieved contexts in rank order with relevance marked as the retrieval metrics judge it (by
id, by exact text, or not at all when the row names no reference), 404 naming a row that is
not there; and a store written before the reasoning was kept reads it as null."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.helpers import scripted_home
from tests.integration.old_store import OLD_ROW, OLD_RUN, write_old_store
from tests.integration.service import ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

JUDGED = [
    "faithfulness",
    "context_recall",
    "answer_correctness",
    "answer_relevancy",
    "context_precision",
    "AnswerRelevancyMetric",
]
BASE = {
    "query": "What does the installer do?",
    "response": "The installer copies the files. It also paints the house.",
    "reference": "The installer copies the files. It checks the version.",
    "retrieved_contexts": ["The installer copies the files.", "Tea grows in China."],
}
ROWS = [
    # matched by id: "c2" is the one relevant chunk, at rank 2
    {**BASE, "retrieved_ids": ["c1", "c2"], "reference_ids": ["c2"]},
    # matched by text: the first context is a reference context
    {**BASE, "reference_contexts": ["The installer copies the files."]},
    # no reference list: relevance unknown (hit_rate is null for this row)
    {**BASE, "reference_contexts": []},
]


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, str]]:
    with (
        scripted_home(tmp_path_factory.mktemp("run-row")) as home,
        ServiceProcess(home, keys=None) as process,
        process.client(None) as http,
    ):
        body = "".join(json.dumps(row) + "\n" for row in ROWS).encode()
        files = {"file": ("judged.jsonl", body, "application/x-ndjson")}
        data(http.post("/datasets", params={"name": "judged"}, files=files), 201)
        started = http.post(
            "/evaluate/runs",
            json={
                "scene_key": "dataset",
                "datasets_name": "judged",
                "evaluate_metrics": [*JUDGED, "hit_rate"],
                "context": {"model": "scripted", "embedding_model": "hashed"},
            },
        )
        run_id = data(started, 202)["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
        yield process, run_id


def _row(http: httpx.Client, run_id: str, index: int) -> dict[str, Any]:
    found: dict[str, Any] = data(http.get(f"/evaluate/runs/{run_id}/rows/{index}"))
    return found


def test_the_results_api_returns_details_for_judged_metrics(
    served: tuple[ServiceProcess, str],
) -> None:
    process, run_id = served
    with process.client(None) as http:
        items = data(http.get(f"/evaluate/runs/{run_id}/results", params={"limit": 100}))["items"]
    assert len(items) == len(ROWS) * (len(JUDGED) + 1)
    for item in items:
        if item["metric_name"] == "hit_rate":
            assert item["details"] is None
        else:
            assert item["details"]["groups"], item["metric_name"]
    faithful = next(i for i in items if i["metric_name"] == "faithfulness")
    statements = faithful["details"]["groups"][0]["items"]
    assert [(s["text"], s["verdict"]) for s in statements] == [
        ("The installer copies the files.", True),
        ("It also paints the house.", False),
    ]


def test_a_row_in_full_with_relevance_by_id(served: tuple[ServiceProcess, str]) -> None:
    process, run_id = served
    with process.client(None) as http:
        row = _row(http, run_id, 0)
    assert (row["query"], row["response"], row["reference"]) == (
        BASE["query"],
        BASE["response"],
        BASE["reference"],
    )
    assert row["match"] == "id" and row["relevant_total"] == 1
    assert [(c["rank"], c["id"], c["text"], c["relevant"]) for c in row["contexts"]] == [
        (1, "c1", BASE["retrieved_contexts"][0], False),
        (2, "c2", BASE["retrieved_contexts"][1], True),
    ]
    assert [r["metric_name"] for r in row["results"]] == [*JUDGED, "hit_rate"]
    by_name = {r["metric_name"]: r for r in row["results"]}
    assert by_name["hit_rate"]["score"] == 1.0 and by_name["hit_rate"]["details"] is None
    assert [r["judged"] for r in row["results"]] == [True] * len(JUDGED) + [False]
    kinds = {name: [g["kind"] for g in by_name[name]["details"]["groups"]] for name in JUDGED}
    assert kinds == {
        "faithfulness": ["response_statements"],
        "context_recall": ["reference_statements"],
        "answer_correctness": ["response_statements", "reference_statements"],
        "answer_relevancy": ["questions"],
        "context_precision": ["contexts"],
        "AnswerRelevancyMetric": ["feedback"],
    }
    assert (row["previous"], row["next"]) == (None, 1)


def test_relevance_by_exact_text_and_unknown_without_references(
    served: tuple[ServiceProcess, str],
) -> None:
    process, run_id = served
    with process.client(None) as http:
        by_text, unknown = _row(http, run_id, 1), _row(http, run_id, 2)
    assert by_text["match"] == "exact"
    assert [c["relevant"] for c in by_text["contexts"]] == [True, False]
    assert all(c["id"] is None for c in by_text["contexts"])
    assert (by_text["previous"], by_text["next"]) == (0, 2)
    # an empty reference list: the exact rule judges every context not relevant, 0 to find
    assert unknown["match"] == "exact" and unknown["relevant_total"] == 0
    hit = next(r for r in unknown["results"] if r["metric_name"] == "hit_rate")
    assert hit["score"] is None and hit["error_kind"] == "input" and hit["error"]
    assert unknown["next"] is None


def test_a_row_that_is_not_there_is_404_naming_it(served: tuple[ServiceProcess, str]) -> None:
    process, run_id = served
    with process.client(None) as http:
        message = failure(http.get(f"/evaluate/runs/{run_id}/rows/3"), 404)
        assert "row_index" in message and "no row 3" in message and "3 rows stored" in message
        assert "row_index" in failure(http.get(f"/evaluate/runs/{run_id}/rows/-1"), 422)
        assert "no run" in failure(http.get("/evaluate/runs/nope/rows/0"), 404)


def test_a_store_from_before_details_reads_them_as_null(tmp_path: Path) -> None:
    home = tmp_path / "old-home"
    write_old_store(home)
    with ServiceProcess(home, keys=None) as process, process.client(None) as http:
        items = data(http.get(f"/evaluate/runs/{OLD_RUN}/results"))["items"]
        assert [i["details"] for i in items] == [None, None]
        assert items[0]["score"] == 1.0  # the rest of the old result is intact
        row = _row(http, OLD_RUN, 0)
    assert row["response"] == OLD_ROW["response"]
    assert [r["details"] for r in row["results"]] == [None, None]
    assert [r["judged"] for r in row["results"]] == [True, False]  # "not recorded" for one
    assert [c["relevant"] for c in row["contexts"]] == [True, False]


def test_both_clients_read_a_row_in_full(served: tuple[ServiceProcess, str]) -> None:
    import asyncio

    from ragmeter.client import AsyncClient, Client

    process, run_id = served
    with process.client(None) as http:
        raw = _row(http, run_id, 0)
    with Client(api_base=process.api) as client:
        row = client.runs.row(run_id, 0)

    async def read() -> Any:
        async with AsyncClient(api_base=process.api) as client:
            return await client.runs.row(run_id, 0)

    assert row == asyncio.run(read())
    assert row.model_dump(mode="json") == raw
    assert row.match == "id" and row.trajectory is None  # a RAG row: no conversation
