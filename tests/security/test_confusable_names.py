"""Names against a real ``ragmeter serve``: datasets, knowledge spaces, apps, prompts, runs,
tags and documents are kept in Unicode NFKC form, so a fullwidth ``golden`` is ``golden`` (the
same dataset, found by either spelling) and never a second one beside it; a word mixing
scripts (``golden`` with a Cyrillic o) and a name holding a bidi override, an isolate, a
zero-width or other invisible character are a 400 naming the field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores

GOLDEN = "golden"
CYRILLIC = "g\u043elden"  # a Cyrillic o
GREEK = "g\u03bflden"  # a Greek omicron
FULLWIDTH = "\uff47\uff4f\uff4c\uff44\uff45\uff4e"  # golden in fullwidth letters
#: invisible and formatting characters: bidi overrides, embeddings, isolates and marks,
#: zero-width characters, a byte order mark, a soft hyphen, a line separator, a control
HIDDEN = [
    "\u202e", "\u202d", "\u202a", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f",
    "\u061c", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u2028", "\u0007",
    "\U000e0041",
]  # fmt: skip
ROWS = b'{"query": "q1", "retrieved_ids": ["a"], "reference_ids": ["a"]}\n'


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with ScriptedJudgeServer() as judge:
        home = tmp_path_factory.mktemp("names")
        write_models(home, judge.url)
        with ServiceProcess(home) as server:
            yield server


def _dataset(http: httpx.Client, name: str) -> httpx.Response:
    files = {"file": ("rows.jsonl", ROWS, "application/x-ndjson")}
    return http.post("/datasets", files=files, data={"name": name})


def _refused(response: httpx.Response, field: str) -> str:
    message = failure(response, 400)
    assert field in message, message
    return message


def test_visually_identical_dataset_names_cannot_coexist(service: ServiceProcess) -> None:
    with service.client() as http:
        first = data(_dataset(http, GOLDEN), 201)
        # fullwidth is the same name: another version of the same dataset, found by either
        again = data(_dataset(http, FULLWIDTH), 201)
        assert again["name"] == GOLDEN and again["id"] in (first["id"], again["id"])
        assert data(http.get(f"/datasets/{FULLWIDTH}"))["name"] == GOLDEN
        for lookalike in (CYRILLIC, GREEK, f"my {CYRILLIC}"):
            assert "mixes" in _refused(_dataset(http, lookalike), "dataset name")
        names = {d["name"] for d in data(http.get("/datasets"))["items"]}
    assert names == {GOLDEN}


def test_invisible_characters_are_refused_in_every_name(service: ServiceProcess) -> None:
    with service.client() as http:
        for index, char in enumerate(HIDDEN):
            name = f"gol{char}den{index}"
            _refused(_dataset(http, name), "dataset name")
            space = {"name": name, "embedder": "hashed"}
            _refused(http.post("/knowledge/spaces", json=space), "knowledge space name")
            app = {"name": name, "config": {"kind": "http", "url": "http://example.com/a"}}
            _refused(http.post("/apps", json=app), "app name")
            prompt = {"code": name, "template": "{query}"}
            _refused(http.post("/prompts", json=prompt), "prompt code")
            run: dict[str, Any] = {
                "scene_key": "dataset",
                "evaluate_metrics": ["mrr"],
                "datasets": [{"query": "q", "retrieved_ids": ["a"], "reference_ids": ["a"]}],
            }
            _refused(http.post("/evaluate/runs", json={**run, "name": name}), "name")
            _refused(http.post("/evaluate/runs", json={**run, "tags": [name]}), "tags")
        assert data(http.get("/evaluate/runs"))["total"] == 0
        assert not data(http.get("/apps")) and not data(http.get("/prompts"))


def test_a_document_name_holds_no_bidi_override(service: ServiceProcess) -> None:
    with service.client() as http:
        data(http.post("/knowledge/spaces", json={"name": "docs", "embedder": "hashed"}), 201)
        # "invoice_\u202etxt.exe" shows as "invoice_exe.txt"
        for name in ("invoice_\u202etxt.md", "a\u200bb.md", "x\u2067y.md"):
            files = [("files", (name, b"# t\n\ntext\n", "text/markdown"))]
            _refused(http.post("/knowledge/spaces/docs/documents", files=files), "file name")
        assert data(http.get("/knowledge/spaces/docs/documents")) == []


def test_names_in_one_script_and_cjk_with_latin_are_kept(service: ServiceProcess) -> None:
    with service.client() as http:
        for name in ("\u0442\u0435\u0441\u0442", "RAG\u6d4b\u8bd5v2", "\u30c6\u30b9\u30c8 set",
                     "\ud55c\uad6d\uc5b4 eval", "a_b-1.2 x"):  # fmt: skip
            assert data(_dataset(http, name), 201)["name"] == name
        run = {
            "scene_key": "dataset",
            "evaluate_metrics": ["mrr"],
            "datasets": [{"query": "q", "retrieved_ids": ["a"], "reference_ids": ["a"]}],
            "name": "\uff42\uff41\uff53\uff45\uff4c\uff49\uff4e\uff45 \u65b0\u6a21\u578b",
            "tags": ["\uff50\uff52\uff4f\uff44"],
        }
        run_id = data(http.post("/evaluate/runs", json=run), 202)["run_id"]
        info = data(http.get(f"/evaluate/runs/{run_id}"))
    assert info["name"] == "baseline \u65b0\u6a21\u578b" and info["tags"] == ["prod"]
