"""Reviewers' flags on production traces through a real ``ragmeter serve`` (SQLite, then
PostgreSQL): a reviewer and a member flag a trace, one flags it again (theirs replaced), the
list and one trace show who flagged it, the list filters by flags, flagged traces become a
dataset version of exactly those rows, and the client flags and unflags; an admin removes
anyone's flag."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.client import Client
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data
from tests.integration.trace_bodies import NOW, export, post, span, tid, traces

pytestmark = pytest.mark.both_stores

V2 = "/api/v2/serve"
SECOND = 1_000_000_000
Served = tuple[ServiceProcess, dict[str, str]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Served]:
    home: Path = tmp_path_factory.mktemp("trace-flags")
    server, keys = users_server(home)
    try:
        with as_user(server, keys["ingest"]) as sender, as_user(server, keys["admin"]) as admin:
            spans = [span(n, 1, query=f"q{n}", start=NOW + n * SECOND) for n in range(1, 6)]
            assert post(sender, export(spans)).status_code == 200
            assert len(traces(admin, 5)) == 5
        yield server, keys
    finally:
        server.stop()


def _flag(served: Served, who: str, n: int, label: str, note: str | None = None) -> Any:
    server, keys = served
    body = {"label": label} if note is None else {"label": label, "note": note}
    with as_user(server, keys[who]) as http:
        return data(http.put(f"{V2}/traces/{tid(n)}/flag", json=body))


def _listed(served: Served, **query: Any) -> dict[str, tuple[int, list[str]]]:
    """The traces the list shows (a viewer reads flags too): each with its flags' count and
    labels."""
    server, keys = served
    with as_user(server, keys["viewer"]) as viewer:
        page = data(viewer.get(f"{V2}/traces", params=query))
    assert page["total"] == len(page["items"])
    return {t["trace_id"]: (t["flags"], t["flag_labels"]) for t in page["items"]}


def test_flags_are_kept_replaced_and_shown_with_who_flagged(served: Served) -> None:
    kept = _flag(served, "reviewer", 1, "wrong", "quotes last year's prices")
    assert (kept["user"], kept["label"]) == ("reviewer", "wrong")
    assert kept["note"] == "quotes last year's prices"
    assert kept["trace_id"] == tid(1) and kept["created_at"]
    _flag(served, "member", 1, "needs_review")
    _flag(served, "reviewer", 1, "good_example")  # the reviewer's flag again: replaced
    server, keys = served
    with as_user(server, keys["viewer"]) as viewer:
        detail = data(viewer.get(f"{V2}/traces/{tid(1)}"))
    shown = [(f["user"], f["label"], f["note"]) for f in detail["flags"]]
    assert shown == [("member", "needs_review", None), ("reviewer", "good_example", None)]
    assert (detail["trace"]["flags"], detail["trace"]["flag_labels"]) == (
        2,
        ["good_example", "needs_review"],
    )
    listed = _listed(served)
    assert listed[tid(1)] == (2, ["good_example", "needs_review"])
    assert listed[tid(2)] == (0, [])


def test_the_list_and_a_dataset_take_flagged_traces(served: Served) -> None:
    _flag(served, "member", 4, "wrong", "made up a refund policy")
    _flag(served, "reviewer", 2, "wrong")
    _flag(served, "reviewer", 1, "good_example")
    assert sorted(_listed(served, flagged=True)) == [tid(1), tid(2), tid(4)]
    assert sorted(_listed(served, flagged=False)) == [tid(3), tid(5)]
    assert sorted(_listed(served, flag="wrong")) == [tid(2), tid(4)]
    server, keys = served
    with as_user(server, keys["member"]) as member:
        for version, filters in ((1, {"flag": "wrong"}), (2, {"flagged": True})):
            body = {"name": "flagged-prod", "filters": filters}
            made = data(member.post(f"{V2}/traces/dataset", json=body), 201)
            assert (made["version"], made["reused"]) == (version, False)
        rows = data(member.get(f"{V2}/datasets/flagged-prod@1/rows"))["items"]
        assert [(r["query"], r["metadata"]["trace_id"]) for r in rows] == [
            ("q2", tid(2)),
            ("q4", tid(4)),
        ]
        rows = data(member.get(f"{V2}/datasets/flagged-prod@2/rows"))["items"]
        assert [r["query"] for r in rows] == ["q1", "q2", "q4"]


def test_the_client_flags_and_unflags_and_an_admin_removes_anyones(served: Served) -> None:
    server, keys = served
    with Client(api_base=server.api, api_key=keys["member"]) as client:
        kept = client.flag_trace(tid(5), "other", note="slow answer")
        assert (kept.user, kept.label, kept.note) == ("member", "other", "slow answer")
        assert [f.user for f in client.trace(tid(5)).flags] == ["member"]
        page = client.traces(flag="other")
        assert [t.trace_id for t in page.items] == [tid(5)] and page.items[0].flags == 1
        assert client.unflag_trace(tid(5)) is True
        assert client.unflag_trace(tid(5)) is False
        assert client.trace(tid(5)).flags == []
    _flag(served, "reviewer", 3, "other", "odd language")
    with Client(api_base=server.api, api_key=keys["admin"]) as admin:
        assert admin.unflag_trace(tid(3), user="reviewer") is True
        assert admin.trace(tid(3)).flags == []
