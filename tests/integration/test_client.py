"""``Client`` and ``AsyncClient`` against a real ``ragmeter serve``: every resource, the same
answers from both, and each kind of failure raised as its own ``ClientError``."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.client import (
    AsyncClient,
    Client,
    ClientAuthError,
    ClientConflictError,
    ClientConnectionError,
    ClientError,
    ClientNotFoundError,
)
from ragmeter.errors import ConflictError, NotFoundError
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, write_models
from tests.integration.service import KEY, ServiceProcess, free_port

pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("client-home")
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with ServiceProcess(home) as server:
            yield server


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Path:
    folder = tmp_path_factory.mktemp("client-files")
    (folder / "awel.md").write_text(GUIDE_AWEL, encoding="utf-8")
    (folder / "rows.jsonl").write_text(
        '{"query": "what is the AWEL operator layer", "doc_name": "awel.md"}\n'
        '{"query": "how does AWEL talk to the DSL layer", "doc_name": "awel.md"}\n',
        encoding="utf-8",
    )
    return folder


def _request(name: str) -> dict[str, Any]:
    return {
        "scene_key": "recall",
        "scene_value": name,
        "datasets_name": name,
        "evaluate_metrics": ["RetrieverHitRateMetric", "RetrieverMRRMetric"],
        "context": {"top_k": 3},
    }


def _sync_tour(client: Client, name: str, files: Path) -> dict[str, Any]:
    """Every resource once, as a user calls them; what came back, without ids and times."""
    seen: dict[str, Any] = {}
    space = client.spaces.create(name, embedder="hashed")
    seen["space"] = client.spaces.get(name).id == space.id and name in {
        s.name for s in client.spaces.list()
    }
    seen["added"] = client.spaces.upload(name, [files / "awel.md"]).added
    seen["documents"] = [d.name for d in client.spaces.documents(name)]
    seen["chunks"] = client.spaces.chunks(name, doc_name="awel.md").total
    hits = client.spaces.retrieve(name, "AWEL operator layer", top_k=2, retriever="bm25")
    seen["hits"] = [h.document for h in hits]
    seen["prompt"] = client.prompts.add(name, "{context} {query}", kind="answer").kind
    seen["prompts"] = name in {p.code for p in client.prompts.list()}
    seen["prompt_get"] = client.prompts.get(name).template
    config = {"kind": "rag", "space": name, "model": "scripted", "prompt": name}
    app = client.apps.add(name, config)
    seen["app"] = client.apps.add(name, config, replace=True).id == app.id
    seen["apps"] = client.apps.get(name).kind, name in {a.name for a in client.apps.list()}
    seen["app_deleted"] = client.apps.delete(name).name
    seen["prompt_deleted"] = client.prompts.delete(name).code
    seen["dataset"] = client.datasets.upload(files / "rows.jsonl", name=name).row_count
    seen["dataset_get"] = client.datasets.get(name).row_count
    seen["datasets"] = name in {d.name for d in client.datasets.list(limit=1000).items}
    seen["rows"] = [r["query"] for r in client.datasets.rows(name).items]
    created = client.runs.create({**_request(name), "evaluate_code": f"{name}-run"})
    info = client.runs.wait(created.run_id, poll=0.1, timeout=120)
    seen["run"] = info.state, info.progress
    seen["runs"] = created.run_id in {r.run_id for r in client.runs.list(state="done").items}
    seen["results"] = [
        (r.row_index, r.metric_name, r.score) for r in client.runs.results(name + "-run")
    ]
    seen["page"] = client.runs.results_page(created.run_id, limit=1).total
    seen["compare"] = [
        (c.metric_name, c.delta, c.verdict, c.margin, c.ci_note is not None)
        for c in client.runs.compare(name + "-run", name + "-run", margin=0.05)
    ]
    with pytest.raises(ClientConflictError) as refused:  # nothing left to do
        client.runs.resume(created.run_id)
    seen["resume"] = refused.value.code
    try:
        seen["cancel"] = client.runs.cancel(created.run_id).state
    except ClientConflictError as exc:
        seen["cancel"] = exc.code
    seen["evaluate"] = [[r["score"] for r in row] for row in client.evaluate(_request(name))]
    seen["scenes"] = [s.scene_key for s in client.scenes()]
    seen["metrics"] = sorted(m.name for m in client.metrics("recall"))
    seen["models"] = client.models()
    seen["space_deleted"] = client.spaces.delete(name).name
    return seen


async def _async_tour(client: AsyncClient, name: str, files: Path) -> dict[str, Any]:
    """``_sync_tour`` with the async client: the same calls, awaited."""
    seen: dict[str, Any] = {}
    space = await client.spaces.create(name, embedder="hashed")
    seen["space"] = (await client.spaces.get(name)).id == space.id and name in {
        s.name for s in await client.spaces.list()
    }
    seen["added"] = (await client.spaces.upload(name, [files / "awel.md"])).added
    seen["documents"] = [d.name for d in await client.spaces.documents(name)]
    seen["chunks"] = (await client.spaces.chunks(name, doc_name="awel.md")).total
    hits = await client.spaces.retrieve(name, "AWEL operator layer", top_k=2, retriever="bm25")
    seen["hits"] = [h.document for h in hits]
    seen["prompt"] = (await client.prompts.add(name, "{context} {query}", kind="answer")).kind
    seen["prompts"] = name in {p.code for p in await client.prompts.list()}
    seen["prompt_get"] = (await client.prompts.get(name)).template
    config = {"kind": "rag", "space": name, "model": "scripted", "prompt": name}
    app = await client.apps.add(name, config)
    seen["app"] = (await client.apps.add(name, config, replace=True)).id == app.id
    seen["apps"] = (
        (await client.apps.get(name)).kind,
        name in {a.name for a in await client.apps.list()},
    )
    seen["app_deleted"] = (await client.apps.delete(name)).name
    seen["prompt_deleted"] = (await client.prompts.delete(name)).code
    seen["dataset"] = (await client.datasets.upload(files / "rows.jsonl", name=name)).row_count
    seen["dataset_get"] = (await client.datasets.get(name)).row_count
    seen["datasets"] = name in {d.name for d in (await client.datasets.list(limit=1000)).items}
    seen["rows"] = [r["query"] for r in (await client.datasets.rows(name)).items]
    created = await client.runs.create({**_request(name), "evaluate_code": f"{name}-run"})
    info = await client.runs.wait(created.run_id, poll=0.1, timeout=120)
    seen["run"] = info.state, info.progress
    seen["runs"] = created.run_id in {
        r.run_id for r in (await client.runs.list(state="done")).items
    }
    seen["results"] = [
        (r.row_index, r.metric_name, r.score) async for r in client.runs.results(name + "-run")
    ]
    seen["page"] = (await client.runs.results_page(created.run_id, limit=1)).total
    seen["compare"] = [
        (c.metric_name, c.delta, c.verdict, c.margin, c.ci_note is not None)
        for c in await client.runs.compare(name + "-run", name + "-run", margin=0.05)
    ]
    with pytest.raises(ClientConflictError) as refused:  # nothing left to do
        await client.runs.resume(created.run_id)
    seen["resume"] = refused.value.code
    try:
        seen["cancel"] = (await client.runs.cancel(created.run_id)).state
    except ClientConflictError as exc:
        seen["cancel"] = exc.code
    seen["evaluate"] = [[r["score"] for r in row] for row in await client.evaluate(_request(name))]
    seen["scenes"] = [s.scene_key for s in await client.scenes()]
    seen["metrics"] = sorted(m.name for m in await client.metrics("recall"))
    seen["models"] = await client.models()
    seen["space_deleted"] = (await client.spaces.delete(name)).name
    return seen


def _named(seen: dict[str, Any], name: str) -> dict[str, Any]:
    """``seen`` with the tour's own name written as NAME, to compare two tours."""
    return {k: (v.replace(name, "NAME") if isinstance(v, str) else v) for k, v in seen.items()}


def test_both_clients_cover_every_resource_alike(service: ServiceProcess, files: Path) -> None:
    with Client(api_base=service.api, api_key=KEY) as client:
        blocking = _sync_tour(client, "tour-sync", files)

    async def tour() -> dict[str, Any]:
        async with AsyncClient(api_base=service.api, api_key=KEY) as client:
            return await _async_tour(client, "tour-async", files)

    awaited = asyncio.run(tour())
    assert _named(blocking, "tour-sync") == _named(awaited, "tour-async")
    assert blocking["added"] == ["awel.md"] and blocking["chunks"] > 0
    assert blocking["hits"][0] == "awel.md" and blocking["app"] and blocking["datasets"]
    assert blocking["run"][0] == "done" and blocking["run"][1]["done"] == 2
    assert len(blocking["results"]) == 4 and blocking["page"] == 4
    # a run against itself on 2 rows: every difference 0, an interval that says nothing, so
    # no equivalence even within the margin asked for
    assert blocking["compare"] == [
        ("RetrieverHitRateMetric", 0.0, "no_evidence", 0.05, True),
        ("RetrieverMRRMetric", 0.0, "no_evidence", 0.05, True),
    ]
    assert blocking["scenes"] == ["recall", "app", "dataset"]
    assert "RetrieverHitRateMetric" in blocking["metrics"]
    assert blocking["models"] == ["hashed", "scripted"]


def _failures(client: Client) -> dict[str, ClientError]:
    """One call failing each way, and what it raised."""
    out: dict[str, ClientError] = {}
    client.prompts.add("taken", "{query} {context} {answer}", replace=True)
    calls = {
        "not_found": lambda: client.runs.get("no-such-run"),
        "conflict": lambda: client.prompts.add("taken", "{query} {context} {answer}"),
    }
    for kind, call in calls.items():
        with pytest.raises(ClientError) as err:
            call()
        out[kind] = err.value
    return out


async def _async_failures(client: AsyncClient) -> dict[str, ClientError]:
    out: dict[str, ClientError] = {}
    await client.prompts.add("taken", "{query} {context} {answer}", replace=True)
    with pytest.raises(ClientError) as err:
        await client.runs.get("no-such-run")
    out["not_found"] = err.value
    with pytest.raises(ClientError) as err:
        await client.prompts.add("taken", "{query} {context} {answer}")
    out["conflict"] = err.value
    return out


def test_not_found_and_conflict_are_their_own_kinds(service: ServiceProcess) -> None:
    with Client(api_base=service.api, api_key=KEY) as client:
        blocking = _failures(client)

    async def failures() -> dict[str, ClientError]:
        async with AsyncClient(api_base=service.api, api_key=KEY) as client:
            return await _async_failures(client)

    for seen in (blocking, asyncio.run(failures())):
        missing, taken = seen["not_found"], seen["conflict"]
        assert type(missing) is ClientNotFoundError and isinstance(missing, NotFoundError)
        assert isinstance(missing, KeyError)  # as ragmeter's own NotFoundError is
        assert (missing.status, missing.code) == (404, "not_found")
        assert "no-such-run" in missing.message and "no-such-run" in str(missing)
        assert type(taken) is ClientConflictError and isinstance(taken, ConflictError)
        assert (taken.status, taken.code) == (409, "conflict") and "taken" in taken.message


def test_a_refused_key_is_an_auth_error(service: ServiceProcess) -> None:
    for key in ("wrong-key", ""):
        with (
            Client(api_base=service.api, api_key=key) as client,
            pytest.raises(ClientAuthError) as err,
        ):
            client.models()
        assert err.value.status == 401 and err.value.code == "unauthorized"

    async def refused() -> ClientAuthError:
        async with AsyncClient(api_base=service.api, api_key="wrong-key") as client:
            with pytest.raises(ClientAuthError) as err:
                await client.runs.list()
            return err.value

    assert asyncio.run(refused()).status == 401


def test_no_server_is_a_connection_error() -> None:
    api = f"http://127.0.0.1:{free_port()}/api/v2"  # nothing listens there
    with Client(api_base=api, api_key=KEY) as client, pytest.raises(ClientConnectionError) as err:
        client.runs.list()
    assert err.value.status is None and "cannot reach" in str(err.value)

    async def unreachable() -> None:
        async with AsyncClient(api_base=api, api_key=KEY) as client:
            await client.models()

    with pytest.raises(ClientConnectionError):
        asyncio.run(unreachable())


def test_a_silent_server_is_a_connection_error() -> None:
    """A server that accepts the connection and never answers: the call's timeout ends it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        api = f"http://127.0.0.1:{listener.getsockname()[1]}/api/v2"
        with (
            Client(api_base=api, timeout=0.5) as client,
            pytest.raises(ClientConnectionError) as err,
        ):
            client.runs.get("any")
        assert "did not answer in time" in str(err.value)

        async def silent() -> None:
            async with AsyncClient(api_base=api, timeout=0.5) as client:
                await client.runs.get("any")

        with pytest.raises(ClientConnectionError, match="did not answer in time"):
            asyncio.run(silent())
