"""Attacks on the flags of production traces in a real ``ragmeter serve`` (SQLite, then
PostgreSQL): a viewer or an ingest key flags a trace; a note past its cap; a label not in the
set; a member or reviewer removes another user's flag; a flag on a trace not kept. Each is
refused with the status and the reason named, and nothing is kept or removed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.wire.traces import MAX_FLAG_NOTE
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, failure
from tests.integration.trace_bodies import export, post, span, tid, traces

pytestmark = pytest.mark.both_stores

V2 = "/api/v2/serve"
Served = tuple[ServiceProcess, dict[str, str]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Served]:
    home: Path = tmp_path_factory.mktemp("flag-attacks")
    server, keys = users_server(home, extra=(("mallory", "member"),))
    try:
        with as_user(server, keys["ingest"]) as sender, as_user(server, keys["admin"]) as admin:
            assert post(sender, export([span(n, 1, query=f"q{n}") for n in (1, 2)])).status_code
            assert len(traces(admin, 2)) == 2
        yield server, keys
    finally:
        server.stop()


def _put(http: httpx.Client, n: int, body: dict[str, Any]) -> httpx.Response:
    return http.put(f"{V2}/traces/{tid(n)}/flag", json=body)


def _flags(served: Served, n: int) -> list[tuple[str, str]]:
    server, keys = served
    with as_user(server, keys["admin"]) as admin:
        detail = data(admin.get(f"{V2}/traces/{tid(n)}"))
    return [(f["user"], f["label"]) for f in detail["flags"]]


def test_a_viewer_and_an_ingest_key_cannot_flag_or_unflag(served: Served) -> None:
    server, keys = served
    for who in ("viewer", "ingest"):
        with as_user(server, keys[who]) as http:
            message = failure(_put(http, 1, {"label": "wrong"}), 403)
            assert f"role '{who}'" in message
            failure(http.delete(f"{V2}/traces/{tid(1)}/flag"), 403)
    assert _flags(served, 1) == []


def test_a_note_past_its_cap_or_an_unknown_label_is_refused(served: Served) -> None:
    server, keys = served
    with as_user(server, keys["reviewer"]) as reviewer:
        long = {"label": "wrong", "note": "x" * (MAX_FLAG_NOTE + 1)}
        message = failure(_put(reviewer, 1, long), 422)
        assert "note" in message and f"at most {MAX_FLAG_NOTE} characters" in message
        message = failure(_put(reviewer, 1, {"label": "delete_everything"}), 422)
        assert "label" in message and "'good_example'" in message
        extra = failure(_put(reviewer, 1, {"label": "wrong", "user": "admin"}), 422)
        assert "user" in extra  # a flag is the caller's: no field names another user
        assert _flags(served, 1) == []
        message = failure(_put(reviewer, 404, {"label": "wrong"}), 404)
        assert tid(404) in message
        failure(reviewer.delete(f"{V2}/traces/{tid(404)}/flag"), 404)


def test_another_users_flag_cannot_be_removed_but_by_an_admin(served: Served) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member:
        data(_put(member, 2, {"label": "wrong", "note": "made up a policy"}))
    for who in ("mallory", "reviewer"):
        with as_user(server, keys[who]) as http:
            message = failure(http.delete(f"{V2}/traces/{tid(2)}/flag?user=member"), 403)
            assert "the flag of 'member'" in message
            # without ``user``: their own flag, which they have none of
            assert data(http.delete(f"{V2}/traces/{tid(2)}/flag")) is False
            # a flag of their own replaces theirs, never the member's
            data(_put(http, 2, {"label": "good_example"}))
            data(http.delete(f"{V2}/traces/{tid(2)}/flag"))
    assert _flags(served, 2) == [("member", "wrong")]
    with as_user(server, keys["admin"]) as admin:
        assert data(admin.delete(f"{V2}/traces/{tid(2)}/flag?user=member")) is True
    assert _flags(served, 2) == []
