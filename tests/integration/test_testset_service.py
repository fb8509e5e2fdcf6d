"""``POST /knowledge/spaces/{space}/testsets`` on a real ``ragmeter serve`` through both
clients: a generation followed like a run, its rows kept as a dataset with chunk-id labels,
and bad requests refused naming the field."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from ragmeter.client import (
    AsyncClient,
    Client,
    ClientConflictError,
    ClientError,
    ClientNotFoundError,
)
from ragmeter.demo import demo_corpus_path
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import KEY, ServiceProcess

pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("testset-service-home")
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with ServiceProcess(home) as server:
            yield server


@pytest.fixture(scope="module")
def garden(service: ServiceProcess) -> str:
    """A space of the demo corpus (English and Chinese) with the scripted embedder."""
    corpus = demo_corpus_path()
    files = sorted(corpus.rglob("*.md"))
    with Client(service.api, api_key=KEY) as client:
        client.spaces.create("garden", embedder="hashed")
        names = [str(f.relative_to(corpus)) for f in files]
        assert len(client.spaces.upload("garden", files, names).added) == len(files)
    return "garden"


def test_generation_is_followed_and_kept_as_a_dataset(service: ServiceProcess, garden: str) -> None:
    with Client(service.api, api_key=KEY) as client:
        started = client.spaces.generate_testset(garden, 6, "scripted", seed=2, name="garden-qa")
        assert started.state == "running" and started.size == 6
        assert started.dataset_name == "garden-qa"  # rows are kept there as they pass
        job = client.spaces.wait_testset(started.id, timeout=120)
        assert job.state == "done", job.error
        assert job.accepted == 6 and job.candidates >= 6
        assert job.cost["requests"] >= 18  # three per candidate
        assert job.dataset_name == "garden-qa" and job.dataset_id is not None
        rows = client.datasets.rows(job.dataset_id).items
        chunks = {c.id: c.content for c in client.spaces.chunks(garden, limit=500).items}
    assert len(rows) == 6
    for row in rows:
        assert row["reference_contexts"] == [chunks[int(i)] for i in row["reference_ids"]]
        assert row["type"] in ("single", "multi", "abstract")


def test_the_async_client_generates_too(service: ServiceProcess, garden: str) -> None:
    async def tour() -> tuple[str, int]:
        async with AsyncClient(service.api, api_key=KEY) as client:
            started = await client.spaces.generate_testset(
                garden, 3, "scripted", types={"single": 1.0}, language="zh"
            )
            job = await client.spaces.wait_testset(started.id, timeout=120)
            assert job.dataset_id is not None
            rows = (await client.datasets.rows(job.dataset_id)).items
            return job.state, sum(r["language"] == "zh" for r in rows)

    assert asyncio.run(tour()) == ("done", 3)


def test_bad_requests_name_the_field(service: ServiceProcess, garden: str) -> None:
    with Client(service.api, api_key=KEY) as client:
        with pytest.raises(ClientError, match="judge_model"):
            client.spaces.generate_testset(garden, 3, "no-such-model")
        with pytest.raises(ClientNotFoundError, match="no-such-space"):
            client.spaces.generate_testset("no-such-space", 3, "scripted")
        with pytest.raises(ClientError, match="types"):
            client.spaces.generate_testset(garden, 3, "scripted", types={"cloze": 1.0})
        client.spaces.create("bare", embedder="hashed")
        with pytest.raises(ClientError, match="no chunks"):
            client.spaces.generate_testset("bare", 3, "scripted")
        client.spaces.generate_testset(garden, 1, "scripted", name="taken")
        with pytest.raises(ClientConflictError, match="taken"):
            client.spaces.generate_testset(garden, 1, "scripted", name="taken")
        starved = client.spaces.generate_testset(garden, 3, "scripted", max_requests=2)
        assert starved.dataset_id is not None
        job = client.spaces.wait_testset(starved.id, timeout=60)
    assert job.state == "failed" and job.error and "--max-requests" in job.error
    assert job.dataset_id is None  # nothing kept: the empty dataset is gone


def test_generations_past_the_servers_cap_are_refused_naming_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """With ``[server] max_testset_jobs = 1`` a second generation while the first (a slow
    judge) runs is a 429 naming the setting; once it is done, another may start."""
    home = tmp_path_factory.mktemp("testset-cap-home")
    corpus = demo_corpus_path()
    files = sorted(corpus.rglob("*.md"))
    with ScriptedJudgeServer(latency_ms=300) as judge:
        write_models(home, judge.url)
        with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
            config.write("\n[server]\nmax_testset_jobs = 1\n")
        with ServiceProcess(home) as server, Client(server.api, api_key=KEY) as client:
            client.spaces.create("garden", embedder="hashed")
            client.spaces.upload("garden", files, [str(f.relative_to(corpus)) for f in files])
            first = client.spaces.generate_testset("garden", 3, "scripted")
            with pytest.raises(ClientError, match=r"max_testset_jobs = 1") as refused:
                client.spaces.generate_testset("garden", 1, "scripted")
            assert refused.value.status == 429
            assert client.spaces.wait_testset(first.id, timeout=120).state == "done"
            again = client.spaces.generate_testset("garden", 1, "scripted")
            assert client.spaces.wait_testset(again.id, timeout=120).state == "done"
