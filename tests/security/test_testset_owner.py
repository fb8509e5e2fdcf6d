"""A member cancelled any test set generation (``POST .../knowledge/testsets/{id}/cancel``):
every member could stop another's running generation. Only the user who started it and
admins may now; the others get 403 naming its maker, and the generation runs on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragmeter.client import Client
from ragmeter.demo import demo_corpus_path
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, failure

V2 = "/api/v2/serve"
#: generations of this size outlast the test with the judge's latency
SLOW = 200


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    home = tmp_path_factory.mktemp("testset-owner")
    with ScriptedJudgeServer(latency_ms=400) as judge:
        write_models(home, judge.url)
        server, keys = users_server(home, (("alice", "member"), ("bob", "member")))
        try:
            corpus = demo_corpus_path()
            files = sorted(corpus.rglob("*.md"))
            with Client(server.api, api_key=keys["alice"]) as alice:
                alice.spaces.create("garden", embedder="hashed")
                alice.spaces.upload("garden", files, [str(f.relative_to(corpus)) for f in files])
            yield server, keys
        finally:
            server.stop()


def _start(http: httpx.Client) -> dict[str, Any]:
    asked = {"size": SLOW, "judge_model": "scripted"}
    job: dict[str, Any] = data(http.post(f"{V2}/knowledge/spaces/garden/testsets", json=asked), 202)
    return job


def test_only_its_maker_or_an_admin_cancels_a_generation(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with (
        as_user(server, keys["alice"]) as alice,
        as_user(server, keys["bob"]) as bob,
        as_user(server, keys["admin"]) as admin,
    ):
        mine, other = _start(alice), _start(alice)
        for job in (mine, other):
            message = failure(bob.post(f"{V2}/knowledge/testsets/{job['id']}/cancel"), 403)
            assert "user 'bob' has role 'member'" in message and "made by 'alice'" in message
            seen = data(bob.get(f"{V2}/knowledge/testsets/{job['id']}"))  # reading is allowed
            assert seen["state"] == "running" and seen.get("created_by") == "alice"
        failure(bob.post(f"{V2}/knowledge/testsets/no-such-job/cancel"), 404)
        assert data(alice.post(f"{V2}/knowledge/testsets/{mine['id']}/cancel"))["id"] == mine["id"]
        assert (
            data(admin.post(f"{V2}/knowledge/testsets/{other['id']}/cancel"))["id"] == other["id"]
        )
        entries = data(admin.get(f"{V2}/audit", params={"user": "admin", "limit": 1}))
        assert (entries[0]["object_kind"], entries[0]["object_id"]) == ("testset", other["id"])
