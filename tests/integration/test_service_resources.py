"""Spaces, documents, chunks, retrieval, prompts, apps and datasets over HTTP; uploads that
are too large, badly named or of the wrong type are refused with a clear 4xx."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.client import Client
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import GUIDE_AWEL, TEA, write_models
from tests.integration.service import KEY, ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("resources-home")
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
            config.write("\n[server]\nmax_upload_mb = 0.01\nmax_request_mb = 0.05\n")
        with ServiceProcess(home) as server:
            with server.client() as http:
                data(
                    http.post("/knowledge/spaces", json={"name": "docs", "embedder": "hashed"}), 201
                )
            yield server


def _files(*items: tuple[str, bytes]) -> list[tuple[str, tuple[str, bytes, str]]]:
    return [("files", (name, content, "application/octet-stream")) for name, content in items]


def test_upload_list_chunks_and_retrieve(service: ServiceProcess) -> None:
    with service.client() as http:
        added = data(
            http.post(
                "/knowledge/spaces/docs/documents",
                files=_files(("guide/awel.md", GUIDE_AWEL.encode()), ("tea.md", TEA.encode())),
            )
        )
        assert sorted(added["added"]) == ["guide/awel.md", "tea.md"] and added["chunks"] > 0
        again = data(
            http.post("/knowledge/spaces/docs/documents", files=_files(("tea.md", TEA.encode())))
        )
        assert again["unchanged"] == ["tea.md"]
        documents = data(http.get("/knowledge/spaces/docs/documents"))
        assert {d["name"] for d in documents} == {"guide/awel.md", "tea.md"}
        every = data(http.get("/knowledge/spaces/docs/chunks", params={"limit": 2}))
        assert every["total"] == added["chunks"] and len(every["items"]) == 2
        one = data(http.get("/knowledge/spaces/docs/chunks", params={"doc_name": "awel.md"}))
        assert one["items"] and {c["document"] for c in one["items"]} == {"guide/awel.md"}
        for retriever in ("vector", "bm25", "hybrid"):
            hits = data(
                http.post(
                    "/knowledge/spaces/docs/retrieve",
                    json={"query": "AWEL operator layer", "top_k": 2, "retriever": retriever},
                )
            )
            assert len(hits) == 2 and hits[0]["document"] == "guide/awel.md", (retriever, hits)
        space = data(http.get("/knowledge/spaces/docs"))
        assert space["documents"] == 2
        assert "docs" in {s["name"] for s in data(http.get("/knowledge/spaces"))}
        failure(http.post("/knowledge/spaces", json={"name": "docs"}), 409)
        failure(http.post("/knowledge/spaces", json={"name": "../x"}), 400)


@pytest.mark.parametrize(
    ("name", "status", "says"),
    [
        ("../escape.md", 400, "unsafe file name"),
        ("/etc/passwd.md", 400, "unsafe file name"),
        ("a\\..\\b.md", 400, "unsafe file name"),
        ("ok/../../x.md", 400, "unsafe file name"),
        ("bell\x85line.md", 400, "unsafe file name"),  # C1 control (next line)
        ("tool.exe", 415, "unsupported file type '.exe'"),
        ("noext", 415, "unsupported file type"),
    ],
)
def test_bad_uploads_are_refused(
    service: ServiceProcess, name: str, status: int, says: str
) -> None:
    with service.client() as http:
        message = failure(
            http.post("/knowledge/spaces/docs/documents", files=_files((name, b"# t\n\ntext\n"))),
            status,
        )
        assert says in message
        names = {d["name"] for d in data(http.get("/knowledge/spaces/docs/documents"))}
    assert not any(".." in n or n.startswith("/") for n in names)


def test_too_large_uploads_are_refused(service: ServiceProcess) -> None:
    big = b"# big\n\n" + b"word " * 4_000  # 20 KB > max_upload_mb (10 KB)
    with service.client() as http:
        message = failure(
            http.post("/knowledge/spaces/docs/documents", files=_files(("big.md", big))), 413
        )
        assert "big.md is larger than 0.01 MB" in message
        huge = b"x" * 60_000  # the whole request over max_request_mb (50 KB)
        failure(http.post("/knowledge/spaces/docs/documents", files=_files(("h.md", huge))), 413)
        unreadable = failure(
            http.post("/knowledge/spaces/docs/documents", files=_files(("fake.pdf", b"not a pdf"))),
            422,
        )
        assert "fake.pdf" in unreadable
        failure(http.post("/knowledge/spaces/docs/documents"), 422)  # no files at all


def test_datasets_upload_list_rows_and_use(service: ServiceProcess) -> None:
    jsonl = (
        b'{"query": "q1", "retrieved_contexts": ["a", "b"], "reference_contexts": ["b"]}\n'
        b'{"query": "q2", "retrieved_contexts": ["a"], "reference_contexts": ["a"]}\n'
    )
    csv = b'question,contexts,ground_truth_contexts\nq1,"[""a"", ""b""]","[""a""]"\n'
    with service.client() as http:
        first = data(http.post("/datasets", files={"file": ("eval.jsonl", jsonl)}), 201)
        assert first["name"] == "eval" and first["row_count"] == 2
        second = data(
            http.post("/datasets", files={"file": ("x.csv", csv)}, data={"name": "from-csv"}), 201
        )
        assert second["row_count"] == 1
        rows = data(http.get("/datasets/from-csv/rows"))
        assert rows["items"] == [
            {"query": "q1", "reference_contexts": ["a"], "retrieved_contexts": ["a", "b"]}
        ]
        listed = data(http.get("/datasets"))
        assert {d["name"] for d in listed["items"]} >= {"eval", "from-csv"}
        bad = b'{"query": "q1"}\n{"retrieved_contexts": ["a"]}\n'
        message = failure(http.post("/datasets", files={"file": ("bad.jsonl", bad)}), 400)
        assert "line 2" in message and "query" in message
        failure(http.post("/datasets", files={"file": ("rows.xlsx", b"PK")}), 415)
        again = data(http.post("/datasets", files={"file": ("eval.jsonl", jsonl)}), 201)
        assert (again["id"], again["version"], again["reused"]) == (first["id"], 1, True)
        body = {
            "scene_key": "dataset",
            "datasets_name": "eval",
            "evaluate_metrics": ["RetrieverMRRMetric"],
        }
        scores = data(http.post("/evaluate/evaluation", json=body))
    assert [[r["score"] for r in row] for row in scores] == [[0.5], [1.0]]


def test_prompts_and_apps(service: ServiceProcess) -> None:
    with Client(api_base=service.api, api_key=KEY) as client:
        prompt = client.prompts.add("answer-en", "Use {context} to answer {query}", kind="answer")
        assert prompt.kind == "answer" and client.prompts.get("answer-en").template.startswith(
            "Use"
        )
        assert "answer-en" in {p.code for p in client.prompts.list()}
        app = client.apps.add(
            "bot", {"kind": "rag", "space": "docs", "model": "scripted", "prompt": "answer-en"}
        )
        assert (
            client.apps.get("bot").id == app.id and app.config["prompt"] == "answer-en@1"
        )  # pinned
        assert client.models() == ["hashed", "scripted"]
        client.apps.delete(app.id)
        assert "bot" not in {a.name for a in client.apps.list()}
        hits = client.spaces.retrieve("docs", "AWEL operator layer", top_k=1, retriever="bm25")
        assert hits[0].document == "guide/awel.md"  # uploaded by the first test
        folder = Path(tempfile.mkdtemp())
        (folder / "rows.jsonl").write_text('{"query": "q", "reference_contexts": ["x"]}\n', "utf-8")
        uploaded = client.datasets.upload(folder / "rows.jsonl", name="client-rows")
        assert uploaded.row_count == 1 and "client-rows" in {
            d.name for d in client.datasets.list().items
        }
        added = client.spaces.upload("docs", [folder / "rows.jsonl"], names=["notes/x.txt"])
        assert added.added == ["notes/x.txt"]
        client.prompts.delete("answer-en")
    with service.client() as http:
        message = failure(
            http.post("/prompts", json={"code": "bad", "template": "{query} {oops}"}), 400
        )
        assert "oops" in message
        callable_app = {"name": "rce", "config": {"kind": "callable", "target": "os:system"}}
        failure(http.post("/apps", json=callable_app), 422)  # never over HTTP
        agent_app = {
            "name": "agent",
            "config": {"kind": "agent", "model": "m", "tools": "http://127.0.0.1:9/tools"},
        }
        failure(http.post("/apps", json=agent_app), 422)  # its tools are the operator's to set
        http_app = {"name": "web", "config": {"kind": "http", "url": "http://127.0.0.1:9/x"}}
        assert "allow_app_hosts" in failure(http.post("/apps", json=http_app), 400)
        public = {"name": "web", "config": {"kind": "http", "url": "http://93.184.216.34/x"}}
        data(http.post("/apps", json=public), 201)
        failure(
            http.post(
                "/apps",
                json={"name": "r", "config": {"kind": "rag", "space": "nope", "model": "scripted"}},
            ),
            404,
        )
        failure(http.get("/prompts/answer-en"), 404)


def test_space_delete(service: ServiceProcess) -> None:
    with service.client() as http:
        data(http.post("/knowledge/spaces", json={"name": "temp", "embedder": "hashed"}), 201)
        deleted: dict[str, Any] = data(http.delete("/knowledge/spaces/temp"))
        assert deleted["name"] == "temp"
        failure(http.get("/knowledge/spaces/temp"), 404)
