"""Review queues and labels attacked with valid keys of every role: a viewer can neither label
nor make a queue (403); a reviewer makes no queue, not even on a run they can read (403),
and a member none on another member's run (403); a label names no reviewer but the caller
(a body naming one is refused, and nothing is kept for the user it named); counts, k and
reviewers past their caps are answered 422 naming the limit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

RUNS = "/api/v2/serve/evaluate/runs"
ROWS = [{"query": f"q{i}", "retrieved_ids": ["a"], "reference_ids": ["a" if i % 2 else "b"]}
        for i in range(6)]  # fmt: skip


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, dict[str, str], str]]:
    server, keys = users_server(
        tmp_path_factory.mktemp("review-attacks"), extra=(("member2", "member"),)
    )
    try:
        with server.client(keys["member"]) as http:
            body = {"scene_key": "dataset", "evaluate_metrics": ["hit_rate"], "datasets": ROWS}
            run_id = data(http.post("/evaluate/runs", json=body), 202)["run_id"]
            assert wait_run(http, run_id)["state"] == "done"
        yield server, keys, run_id
    finally:
        server.stop()


def _queue_body(**more: Any) -> dict[str, Any]:
    return {"metric": "hit_rate", "count": 2, "reviewers": ["reviewer"], **more}


@pytest.mark.parametrize("role", ["viewer", "reviewer"])
def test_a_viewer_or_reviewer_makes_no_queue(
    served: tuple[ServiceProcess, dict[str, str], str], role: str
) -> None:
    server, keys, run_id = served
    with as_user(server, keys[role]) as http:
        msg = failure(http.post(f"{RUNS}/{run_id}/reviews", json=_queue_body()), 403)
    assert f"user '{role}' has role '{role}'" in msg and "write_own" in msg
    with as_user(server, keys["config"]) as admin:
        assert data(admin.get(f"{RUNS}/{run_id}/reviews")) == []


def test_a_member_makes_no_queue_on_another_members_run(
    served: tuple[ServiceProcess, dict[str, str], str],
) -> None:
    server, keys, run_id = served
    with as_user(server, keys["member2"]) as http:
        msg = failure(http.post(f"{RUNS}/{run_id}/reviews", json=_queue_body()), 403)
    assert "made by 'member'" in msg


def test_a_viewer_cannot_label(served: tuple[ServiceProcess, dict[str, str], str]) -> None:
    server, keys, run_id = served
    label = {"metric": "hit_rate", "value": 1}
    with as_user(server, keys["viewer"]) as http:
        put = failure(http.put(f"{RUNS}/{run_id}/rows/0/labels", json=label), 403)
        gone = failure(http.delete(f"{RUNS}/{run_id}/rows/0/labels?metric=hit_rate"), 403)
    assert "needs label (roles: admin, member, reviewer)" in put and "needs label" in gone
    with as_user(server, keys["member"]) as member:  # members label too, as themselves
        kept = data(member.put(f"{RUNS}/{run_id}/rows/0/labels", json=label))
        assert kept["reviewer"] == "member"
        data(member.delete(f"{RUNS}/{run_id}/rows/0/labels?metric=hit_rate"))


def test_a_reviewer_cannot_label_as_another_user(
    served: tuple[ServiceProcess, dict[str, str], str],
) -> None:
    server, keys, run_id = served
    forged = {"metric": "hit_rate", "value": 0, "reviewer": "admin"}
    with as_user(server, keys["reviewer"]) as http:
        msg = failure(http.put(f"{RUNS}/{run_id}/rows/1/labels", json=forged), 422)
        assert "reviewer: Extra inputs are not permitted" in msg
        own = data(
            http.put(f"{RUNS}/{run_id}/rows/1/labels", json={"metric": "hit_rate", "value": 0})
        )
        assert own["reviewer"] == "reviewer"
    with as_user(server, keys["admin"]) as admin:  # nothing was kept in the admin's name
        assert data(admin.get(f"{RUNS}/{run_id}/rows/1/labels")) == []
        # the admin's DELETE removes the admin's own label only: the reviewer's stays
        assert data(admin.delete(f"{RUNS}/{run_id}/rows/1/labels?metric=hit_rate")) is False
    with as_user(server, keys["reviewer"]) as http:
        assert len(data(http.get(f"{RUNS}/{run_id}/rows/1/labels"))) == 1


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        ({"count": 1001}, "MAX_COUNT"),
        ({"k": 11, "reviewers": [f"u{i}" for i in range(11)]}, "MAX_K"),
        ({"reviewers": [f"u{i}" for i in range(51)]}, "MAX_REVIEWERS"),
        ({"strata": 21}, "MAX_STRATA"),
        ({"reviewers": [f"u{i}" for i in range(1001)]}, "at most 1000 items"),
    ],
)
def test_caps_are_answered_422_naming_the_limit(
    served: tuple[ServiceProcess, dict[str, str], str], body: dict[str, Any], limit: str
) -> None:
    server, keys, run_id = served
    with as_user(server, keys["member"]) as http:
        msg = failure(http.post(f"{RUNS}/{run_id}/reviews", json=_queue_body(**body)), 422)
    assert limit in msg
