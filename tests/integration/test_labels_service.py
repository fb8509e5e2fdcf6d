"""Human labels over a real ``ragmeter serve`` (SQLite, then PostgreSQL), through the client:
kept on a dataset or on a run (the same rows: every run of the version sees them), named by
row id, query or index, each the sender's, listed a page at a time with filters, and
downloaded as JSONL or CSV that imports again to the same labels."""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from ragmeter.client import AsyncClient, Client, ClientError
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, wait_run

pytestmark = pytest.mark.both_stores

V2 = "/api/v2/serve"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    server, keys = users_server(tmp_path_factory.mktemp("labels-service"))
    try:
        yield server, keys
    finally:
        server.stop()


def _rows() -> list[dict[str, Any]]:
    tag = uuid.uuid4().hex[:8]
    return [
        {"id": f"{tag}-1", "query": f"q1 {tag}", "retrieved_ids": ["a"], "reference_ids": ["a"]},
        {"id": f"{tag}-2", "query": f"q2 {tag}", "retrieved_ids": ["a"], "reference_ids": ["b"]},
        {"query": f"q3 {tag}", "retrieved_ids": ["b"], "reference_ids": ["b"]},
    ]


def _dataset(server: ServiceProcess, key: str, rows: list[dict[str, Any]]) -> str:
    name = f"ds-{uuid.uuid4().hex[:8]}"
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    with as_user(server, key) as http:
        files = {"file": ("rows.jsonl", body)}
        data(http.post(f"{V2}/datasets", files=files, data={"name": name}), 201)
    return name


def _run(server: ServiceProcess, key: str, dataset: str) -> str:
    with as_user(server, key) as http:
        body = {
            "scene_key": "dataset",
            "datasets_name": dataset,
            "evaluate_metrics": ["RetrieverHitRateMetric"],
        }
        run_id: str = data(http.post(f"{V2}/evaluate/runs", json=body), 202)["run_id"]
        http.base_url = http.base_url.join(f"{V2}/")
        wait_run(http, run_id)
    return run_id


def _key(labels: list[Any]) -> list[tuple[Any, ...]]:
    return [(lb.row_index, lb.metric, lb.reviewer, lb.value, lb.comment) for lb in labels]


def test_labels_kept_on_a_dataset_and_seen_by_its_runs(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    rows = _rows()
    name = _dataset(server, keys["member"], rows)
    run_id = _run(server, keys["member"], name)
    with (
        Client(api_base=server.api, api_key=keys["reviewer"]) as reviewer,
        Client(api_base=server.api, api_key=keys["member"]) as member,
    ):
        kept = reviewer.put_labels(
            [
                {
                    "row_id": rows[0]["id"],
                    "metric": "faithfulness",
                    "value": "pass",
                    "comment": "ok",
                },
                {"query": rows[2]["query"], "metric": "faithfulness", "value": 0},
            ],
            dataset=name,
        )
        assert kept.kept == 2
        kept = member.put_labels(
            [{"row_index": 1, "metric": "faithfulness", "value": False, "comment": "wrong"}],
            run_id=run_id,
        )
        assert kept.kept == 1 and kept.dataset_id == reviewer.datasets.get(name).id
        page = member.labels(run_id=run_id)
        assert page.total == 3
        assert _key(page.items) == [
            (0, "faithfulness", "reviewer", 1.0, "ok"),
            (1, "faithfulness", "member", 0.0, "wrong"),
            (2, "faithfulness", "reviewer", 0.0, ""),
        ]
        assert page.items[0].row_id == rows[0]["id"] and page.items[2].query == rows[2]["query"]
        assert page.items[1].run_id == run_id and page.items[0].run_id is None
        by_member = member.labels(dataset=name, reviewer="member")
        assert _key(by_member.items) == [_key(page.items)[1]]
        second = member.labels(dataset=name, offset=1, limit=1)
        assert (second.total, _key(second.items)) == (3, [_key(page.items)[1]])
        # a reviewer's new label of the same row and metric replaces the old one
        reviewer.put_labels([{"row_index": 0, "metric": "faithfulness", "value": 0}], dataset=name)
        assert member.labels(dataset=name, reviewer="reviewer").items[0].value == 0.0


def test_export_imports_again_to_the_same_labels(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    rows = _rows()
    name = _dataset(server, keys["member"], rows)
    with Client(api_base=server.api, api_key=keys["admin"]) as admin:
        admin.put_labels(
            [
                {"row_id": rows[0]["id"], "metric": "m", "value": 0.25, "reviewer": "ann"},
                {"query": rows[2]["query"], "metric": "m", "value": 1, "comment": 'a "b", c'},
            ],
            dataset=name,
        )
        before = _key(admin.labels(dataset=name).items)
        assert before == [(0, "m", "ann", 0.25, ""), (2, "m", "admin", 1.0, 'a "b", c')]
        jsonl = admin.export_labels(dataset=name)
        lines = [json.loads(line) for line in jsonl.splitlines()]
        assert [line.get("row_id") for line in lines] == [rows[0]["id"], None]
        assert lines[1]["query"] == rows[2]["query"] and lines[1]["row_index"] == 2
        table = list(csv.DictReader(io.StringIO(admin.export_labels(dataset=name, format="csv"))))
        assert [row["reviewer"] for row in table] == ["ann", "admin"]
        # the same rows as a new dataset: the export's lines name them again
        other = _dataset(server, keys["member"], rows)
        admin.put_labels(
            [{k: v for k, v in line.items() if k != "created_at"} for line in lines],
            dataset=other,
        )
        assert _key(admin.labels(dataset=other).items) == before


async def test_the_async_client_and_its_errors(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    rows = _rows()
    name = _dataset(server, keys["member"], rows)
    async with AsyncClient(api_base=server.api, api_key=keys["member"]) as client:
        kept = await client.put_labels(
            [{"row_index": 2, "metric": "AnswerRelevancyMetric", "value": 4}], dataset=name
        )
        assert kept.kept == 1
        assert (await client.labels(dataset=name, metric="AnswerRelevancyMetric")).total == 1
        assert (await client.labels(dataset=name, metric="other")).total == 0
        with pytest.raises(ClientError) as caught:
            await client.put_labels(
                [{"row_index": 0, "metric": "AnswerRelevancyMetric", "value": 9}], dataset=name
            )
        assert caught.value.status == 422 and "outside AnswerRelevancyMetric's scale" in str(
            caught.value
        )
        with pytest.raises(ClientError) as caught:
            await client.labels(dataset="no-such-dataset")
        assert caught.value.status == 404
        text = await client.export_labels(dataset=name, metric="AnswerRelevancyMetric")
        assert json.loads(text)["value"] == 4.0
