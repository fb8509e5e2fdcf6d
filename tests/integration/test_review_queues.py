"""Review queues over a real ``ragmeter serve`` with users of every role (SQLite, then
PostgreSQL): a run's owner makes a queue for two reviewers, each reads their rows in order,
labels one (as themselves), sees it done and their progress move, and removes it again;
reviewers who may not label, unknown metrics and a run without repeats are refused by name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragmeter.client import Client, ClientError
from ragmeter.runs.storage.review_queues import ReviewQueueStore
from ragmeter.store.db import open_store
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

ROWS = [
    {"query": f"question {i}", "retrieved_ids": ["a", "b", "c"], "reference_ids": [["a", "b", "c", "z"][i % 4]]}
    for i in range(12)
]  # fmt: skip
V2 = "/api/v2/serve/evaluate/runs"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, dict[str, str], str]]:
    home = tmp_path_factory.mktemp("review-queues")
    server, keys = users_server(home, extra=(("rev2", "reviewer"),))
    try:
        with server.client(keys["member"]) as http:
            body = {"scene_key": "dataset", "evaluate_metrics": ["mrr"], "datasets": ROWS}
            run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
            assert wait_run(http, run_id)["state"] == "done"
        yield server, keys, run_id
    finally:
        server.stop()


def _queue(http: httpx.Client, run_id: str, status: int = 201, **body: Any) -> Any:
    request = {"metric": "mrr", "rule": "random", "count": 4, "reviewers": ["reviewer", "rev2"],
               "k": 2, "seed": 3, **body}  # fmt: skip
    response = http.post(f"{V2}/{run_id}/reviews", json=request)
    return data(response, status) if status < 300 else failure(response, status)


def test_a_reviewer_labels_their_rows_of_a_queue(
    served: tuple[ServiceProcess, dict[str, str], str],
) -> None:
    server, keys, run_id = served
    with as_user(server, keys["member"]) as owner:
        made = _queue(owner, run_id)
    assert (made["rule"], made["rows"], made["eligible"], made["created_by"]) == (
        "random", 4, 12, "member")  # fmt: skip
    assert made["scale"] == [0, 1]
    assert [(p["reviewer"], p["labelled"], p["assigned"]) for p in made["progress"]] == [
        ("reviewer", 0, 4), ("rev2", 0, 4)]  # fmt: skip
    with as_user(server, keys["reviewer"]) as http:
        mine = data(http.get(f"{V2}/{run_id}/reviews/{made['id']}"))
        assert mine["reviewer"] == "reviewer"
        items = mine["items"]
        assert [i["position"] for i in items] == [0, 1, 2, 3]
        assert all(not i["done"] and i["probability"] == pytest.approx(4 / 12) for i in items)
        first = items[0]["row_index"]
        label = {"metric": "mrr", "value": 0.5, "comment": "half right"}
        kept = data(http.put(f"{V2}/{run_id}/rows/{first}/labels", json=label))
        assert (kept["reviewer"], kept["value"], kept["comment"]) == ("reviewer", 0.5, "half right")
        again = data(http.get(f"{V2}/{run_id}/reviews/{made['id']}"))
        assert (again["items"][0]["done"], again["items"][0]["value"]) == (True, 0.5)
        assert [i["done"] for i in again["items"][1:]] == [False] * 3
        listed = data(http.get(f"{V2}/{run_id}/reviews"))
        progress = {p["reviewer"]: p["labelled"] for p in listed[-1]["progress"]}
        assert progress == {"reviewer": 1, "rev2": 0}
        own = data(http.get(f"{V2}/{run_id}/rows/{first}/labels"))
        assert [(lb["metric"], lb["value"]) for lb in own] == [("mrr", 0.5)]
        msg = failure(http.put(f"{V2}/{run_id}/rows/{first}/labels",
                               json={"metric": "mrr", "value": 2}), 400)  # fmt: skip
        assert "outside mrr's scale" in msg
        msg = failure(http.put(f"{V2}/{run_id}/rows/{first}/labels",
                               json={"metric": "faithfulness", "value": 1}), 400)  # fmt: skip
        assert "has no metric 'faithfulness'" in msg
        assert data(http.delete(f"{V2}/{run_id}/rows/{first}/labels?metric=mrr")) is True
        assert data(http.delete(f"{V2}/{run_id}/rows/{first}/labels?metric=mrr")) is False
        assert not data(http.get(f"{V2}/{run_id}/reviews/{made['id']}"))["items"][0]["done"]
    with as_user(server, keys["rev2"]) as other:  # the other reviewer does not see it
        assert data(other.get(f"{V2}/{run_id}/rows/{first}/labels")) == []


def test_rules_over_the_stored_run(served: tuple[ServiceProcess, dict[str, str], str]) -> None:
    server, keys, run_id = served
    with as_user(server, keys["config"]) as admin:  # an admin makes queues on any run
        strata = _queue(admin, run_id, rule="stratified", count=3, k=1, strata=3)
        assert strata["rows"] == 6 and strata["created_by"] == "config"
        near = _queue(admin, run_id, rule="threshold", threshold=0.4, count=2, k=1)
        assert near["options"]["threshold"] == 0.4 and near["rows"] == 4
        msg = _queue(admin, run_id, 400, rule="disagreement")
        assert "this run has no repeats" in msg
        msg = _queue(admin, run_id, 400, rule="threshold")  # mrr gives no verdicts
        assert "threshold: the run's results do not tell" in msg
        assert "has no metric 'ndcg'" in _queue(admin, run_id, 400, metric="ndcg")
        listed = data(admin.get(f"{V2}/{run_id}/reviews"))
        assert [q["id"] for q in listed] == sorted(q["id"] for q in listed)
        assert "no review queue 99999" in failure(admin.get(f"{V2}/{run_id}/reviews/99999"), 404)


@pytest.mark.parametrize(
    ("reviewers", "named"),
    [
        (["viewer"], "user 'viewer' has role 'viewer', which may not label (roles: admin, member, reviewer)"),
        (["member", "viewer"], "user 'viewer' has role 'viewer', which may not label"),
        (["ghost"], "reviewers: no user 'ghost'"),
    ],
)  # fmt: skip
def test_reviewers_must_be_users_who_may_label(
    served: tuple[ServiceProcess, dict[str, str], str], reviewers: Any, named: str
) -> None:
    server, keys, run_id = served
    with as_user(server, keys["member"]) as owner:
        assert named in _queue(owner, run_id, 400, reviewers=reviewers, k=1)


def test_the_client_makes_reads_and_labels_a_queue(
    served: tuple[ServiceProcess, dict[str, str], str],
) -> None:
    server, keys, run_id = served
    with Client(api_base=server.api, api_key=keys["member"]) as owner:
        made = owner.runs.create_review(run_id, "mrr", rule="stratified", count=2,
                                        reviewers=["rev2"], seed=1)  # fmt: skip
        with pytest.raises(ClientError, match="rule failures: no row of the run fits the rule"):
            owner.runs.create_review(run_id, "mrr", rule="failures", reviewers=["rev2"])
    assert made.rule == "stratified" and made.progress[0].assigned == 2
    with Client(api_base=server.api, api_key=keys["rev2"]) as client:
        mine = client.runs.review(run_id, made.id)
        row = mine.items[0].row_index
        kept = client.runs.label_row(run_id, row, "mrr", 0.0, "no relevant result")
        assert (kept.reviewer, kept.value) == ("rev2", 0.0)
        assert [lb.comment for lb in client.runs.row_labels(run_id, row)] == ["no relevant result"]
        queue = next(q for q in client.runs.reviews(run_id) if q.id == made.id)
        assert (queue.progress[0].labelled, queue.progress[0].assigned) == (1, 2)
        assert client.runs.unlabel_row(run_id, row, "mrr") is True
        with pytest.raises(ClientError, match="has no metric 'ndcg'"):
            client.runs.label_row(run_id, row, "ndcg", 1)


def test_a_queue_goes_with_its_run(served: tuple[ServiceProcess, dict[str, str], str]) -> None:
    server, keys, _run = served
    with server.client(keys["member"]) as http:
        body = {"scene_key": "dataset", "evaluate_metrics": ["mrr"], "datasets": ROWS[:5]}
        run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
        assert wait_run(http, run_id)["state"] == "done"
        made = data(http.post(f"/evaluate/runs/{run_id}/reviews",
                              json={"metric": "mrr", "count": 2, "reviewers": ["reviewer"]}), 201)  # fmt: skip
        queues = ReviewQueueStore(open_store(server.store_url))
        assert len(queues.items(made["id"])) == 2
        data(http.delete(f"/evaluate/runs/{run_id}"))
    assert queues.items(made["id"]) == [] and queues.of_run(run_id) == []
