"""Issue 26, findings 6 and 7, against a real ``ragmeter serve`` with a slow scripted judge:

- F6: deleting a running test set's dataset left the generation ``running`` forever, and
  ``[server] max_testset_jobs`` such zombies made every later generation 429 until a restart.
  Deleting it over the API is now refused (409, naming the cancel route); a dataset deleted
  anyway (by another process on the same store) ends its generation failed; either way the
  slot is free again.
- F7: bad requests were accepted with a 202 and failed later (NaN or infinite type shares,
  unknown documents, a 4,000-digit seed); there was no way to stop a generation and no
  budget unless the request named one. Every field is now checked before the 202, POST
  ``.../testsets/{id}/cancel`` stops one (in both clients), and a generation's budget
  defaults to ``size`` x ``[server] testset_requests_per_question`` (and tokens)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragmeter.client import Client, ClientConflictError
from ragmeter.demo import demo_corpus_path
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import KEY, ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores

#: generations of this size outlast every test with the judge's latency
SLOW = 200


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("testset-jobs-home")
    with ScriptedJudgeServer(latency_ms=400) as judge:
        write_models(folder, judge.url)
        yield folder


@pytest.fixture(scope="module")
def service(home: Path) -> Iterator[ServiceProcess]:
    corpus = demo_corpus_path()
    files = sorted(corpus.rglob("*.md"))
    with ServiceProcess(home) as server, Client(server.api, api_key=KEY) as client:
        client.spaces.create("garden", embedder="hashed")
        client.spaces.upload("garden", files, [str(f.relative_to(corpus)) for f in files])
        yield server


def _start(http: httpx.Client, **body: Any) -> dict[str, Any]:
    asked = {"size": SLOW, "judge_model": "scripted", **body}
    job: dict[str, Any] = data(http.post("/knowledge/spaces/garden/testsets", json=asked), 202)
    return job


def _ended(http: httpx.Client, job_id: str, within: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        job: dict[str, Any] = data(http.get(f"/knowledge/testsets/{job_id}"))
        if job["state"] != "running":
            return job
        time.sleep(0.2)
    raise AssertionError(f"generation {job_id} still running after {within} s")


def _kept_one(http: httpx.Client, job_id: str) -> None:
    """Wait until the generation has kept a row (its dataset holds something)."""
    deadline = time.monotonic() + 60
    while data(http.get(f"/knowledge/testsets/{job_id}"))["accepted"] == 0:
        assert time.monotonic() < deadline, "no row kept in 60 s"
        time.sleep(0.2)


def test_a_running_generations_dataset_cannot_be_deleted_and_cancel_frees_the_slot(
    service: ServiceProcess,
) -> None:
    with service.client() as http:
        jobs = [_start(http, name=f"zombie-{i}") for i in range(4)]
        for job in jobs:
            for route in (f"/datasets/{job['dataset_name']}", f"/datasets/{job['dataset_id']}"):
                message = failure(http.delete(route), 409)
                assert job["id"] in message and "/cancel" in message
            old_style = http.delete(
                f"{service.url}/api/v1/evaluate/dataset", params={"code": job["dataset_name"]}
            )
            assert old_style.status_code == 409
        assert http.post("/knowledge/spaces/garden/testsets", json={"size": 1, "judge_model": "scripted"}).status_code == 429  # fmt: skip
        _kept_one(http, jobs[0]["id"])
        for job in jobs:
            cancelled = data(http.post(f"/knowledge/testsets/{job['id']}/cancel"))
            assert cancelled["id"] == job["id"]
        ended = [_ended(http, job["id"]) for job in jobs]
        assert {job["state"] for job in ended} == {"cancelled"}
        kept = ended[0]
        assert kept["accepted"] >= 1 and kept["dataset_id"] == jobs[0]["dataset_id"]
        rows = data(http.get(f"/datasets/{kept['dataset_id']}/rows"))
        assert rows["total"] == kept["accepted"]  # the rows kept so far stay
        failure(http.post(f"/knowledge/testsets/{jobs[0]['id']}/cancel"), 409)  # ended
        again = _start(http, size=1)  # every slot is free again
        assert _ended(http, again["id"])["state"] == "done"


def test_a_dataset_deleted_by_another_process_ends_its_generation_failed(
    service: ServiceProcess, home: Path
) -> None:
    with service.client() as http:
        job = _start(http, name="vanishing")
        _kept_one(http, job["id"])
        other = Store(service.store_url)  # the CLI on the same store
        RunStore(other).delete_dataset(job["dataset_id"])
        other.close()
        ended = _ended(http, job["id"])
        assert ended["state"] == "failed" and "deleted" in (ended["error"] or "")
        slots = [_start(http, name=f"after-{i}") for i in range(4)]  # none is held
        for started in slots:
            data(http.post(f"/knowledge/testsets/{started['id']}/cancel"))
        assert {_ended(http, s["id"])["state"] for s in slots} == {"cancelled"}


_PER_REQUESTS = "[server] testset_requests_per_question = 10"
_PER_TOKENS = "[server] testset_tokens_per_question = 20000"


@pytest.mark.parametrize(
    ("body", "status", "named"),
    [
        ('{"size": 3, "judge_model": "scripted", "types": {"single": NaN}}', 422, "types"),
        ('{"size": 3, "judge_model": "scripted", "types": {"multi": Infinity}}', 422, "types"),
        ('{"size": 3, "judge_model": "scripted", "docs": ["no/such.md"]}', 400, "docs"),
        ('{"size": 3, "judge_model": "scripted", "seed": ' + "9" * 4000 + "}", 422, "seed"),
        (
            '{"size": 3, "judge_model": "scripted", "max_requests": 31}',
            400,
            "testset_requests_per_question = 10",
        ),
        (
            '{"size": 3, "judge_model": "scripted", "max_tokens": 60001}',
            400,
            "testset_tokens_per_question = 20000",
        ),
    ],
)
def test_bad_requests_are_refused_before_the_202_naming_the_field(
    service: ServiceProcess, body: str, status: int, named: str
) -> None:
    with service.client() as http:
        sent = http.post(
            "/knowledge/spaces/garden/testsets",
            content=body,
            headers={"Content-Type": "application/json"},
        )
        message = failure(sent, status)
    assert named in message and "ValueError" not in message


def test_a_generation_has_the_servers_default_budget_and_the_client_cancels(
    service: ServiceProcess,
) -> None:
    with Client(service.api, api_key=KEY) as client:
        job = client.spaces.generate_testset("garden", SLOW, "scripted")
        assert (job.max_requests, job.max_tokens) == (SLOW * 10, SLOW * 20_000)
        stopped = client.spaces.cancel_testset(job.id)
        assert stopped.id == job.id
        assert client.spaces.wait_testset(job.id, timeout=60).state == "cancelled"
        with pytest.raises(ClientConflictError, match="cancelled"):
            client.spaces.cancel_testset(job.id)
        asked = client.spaces.generate_testset("garden", 2, "scripted", max_requests=15)
        assert asked.max_requests == 15
        assert client.spaces.wait_testset(asked.id, timeout=60).state == "done"
