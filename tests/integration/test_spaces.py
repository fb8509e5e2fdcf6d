"""``ragmeter space`` as a user runs it: real subprocesses, a real SQLite store, embeddings
from the scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import json_lines, run, write_corpus, write_models


def _build(home: Path, url: str, folder: Path) -> Path:
    """A space 'kb' embedding with the scripted server, holding the test corpus."""
    write_models(home, url)
    corpus = write_corpus(folder)
    created = run("space", "create", "kb", "--embedder", "hashed", home=home)
    assert created.returncode == 0, created.stderr
    added = run("space", "add", "kb", str(corpus), home=home)
    assert added.returncode == 0, added.stderr
    assert "added 5, updated 0, unchanged 0, empty 1, skipped 1 (unsupported type)" in added.stdout
    return corpus


@pytest.fixture
def space(home: Path, judge_server: ScriptedJudgeServer, tmp_path: Path) -> Path:
    """A fresh space for tests that change it."""
    return _build(home, judge_server.url, tmp_path / "corpus")


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One space for the tests that only read it, served by a module-wide scripted server."""
    root = tmp_path_factory.mktemp("spaces")
    with ScriptedJudgeServer() as server:
        _build(root / "home", server.url, root / "corpus")
        yield root / "home"


def test_adding_again_skips_unchanged_and_rechunks_changed_documents(
    space: Path, home: Path
) -> None:
    again = run("space", "add", "kb", str(space), home=home)
    assert "added 0, updated 0, unchanged 5" in again.stdout
    assert "0 new chunks" in again.stdout
    (space / "guide" / "awel.md").write_text(
        "# What is AWEL?\n\nAWEL now has a fourth layer.\n", encoding="utf-8"
    )
    changed = run("space", "add", "kb", str(space), home=home)
    assert "added 0, updated 1, unchanged 4" in changed.stdout
    chunks = json_lines(run("space", "chunks", "kb", "guide/awel.md", home=home).stdout)
    assert [c["content"] for c in chunks] == ['"What is AWEL?": AWEL now has a fourth layer.']
    listing = run("space", "list", home=home).stdout
    assert "kb" in listing and "hashed" in listing and "markdown 512/50" in listing


def test_chunks_are_dbgpt_style_json_lines(shared_home: Path) -> None:
    home = shared_home
    result = run("space", "chunks", "kb", "guide/awel.md", home=home)
    assert result.returncode == 0, result.stderr
    chunks = json_lines(result.stdout)
    assert [c["content"] for c in chunks] == [
        '"What is AWEL?": AWEL is a workflow expression language for building LLM applications.',
        '"What is AWEL?-AWEL Design": AWEL is divided into an operator layer, an AgentFream '
        "layer and a DSL layer.",
        '"What is AWEL?-Executable environment": AWEL workflows run in a stand-alone '
        "environment or on a Ray cluster.",
    ]
    assert [c["position"] for c in chunks] == [0, 1, 2]
    assert {c["document"] for c in chunks} == {"guide/awel.md"}
    html = json_lines(run("space", "chunks", "kb", "page.html", home=home).stdout)
    assert html[0]["content"] == '"Ray": Ray runs distributed Python workloads.'
    # a unique file name is enough; a shared one is an error naming the candidates
    assert json_lines(run("space", "chunks", "kb", "tea.md", home=home).stdout)
    ambiguous = run("space", "chunks", "kb", "awel.md", home=home)
    assert ambiguous.returncode == 2
    assert "'awel.md' matches 2 documents" in ambiguous.stderr
    assert "guide/awel.md, notes/awel.md" in ambiguous.stderr


@pytest.mark.parametrize(
    ("retriever", "query", "document"),
    [
        ("vector", "operator layer AgentFream layer DSL layer", "guide/awel.md"),
        ("bm25", "MapOperator JoinOperator", "notes/awel.md"),
        ("bm25", "乌龙茶 沸水", "guide/tea.md"),
        ("hybrid", "compost air water", "readme.txt"),
    ],
)
def test_search_finds_the_right_document(
    shared_home: Path, retriever: str, query: str, document: str
) -> None:
    home = shared_home
    result = run(
        "space",
        "search",
        "kb",
        query,
        "--retriever",
        retriever,
        "--top-k",
        "3",
        "--json",
        home=home,
    )
    assert result.returncode == 0, result.stderr
    hits = json_lines(result.stdout)
    assert hits[0]["document"] == document
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_score_threshold_drops_weak_hits(shared_home: Path) -> None:
    home = shared_home
    loose = json_lines(run("space", "search", "kb", "AWEL", "--json", home=home).stdout)
    cut = min(h["score"] for h in loose) + 1e-6
    strict = json_lines(
        run(
            "space", "search", "kb", "AWEL", "--json", "--score-threshold", str(cut), home=home
        ).stdout
    )
    assert 0 < len(strict) < len(loose)
    assert all(h["score"] >= cut for h in strict)


def test_a_stale_index_is_rebuilt_from_the_chunks(space: Path, home: Path) -> None:
    meta = home / "ragmeter-files" / "spaces" / "1" / "index.json"
    before = run("space", "search", "kb", "Ray cluster", "--json", home=home).stdout
    meta.write_text(json.dumps({"revision": -1}), encoding="utf-8")
    assert run("space", "search", "kb", "Ray cluster", "--json", home=home).stdout == before
    assert json.loads(meta.read_text(encoding="utf-8"))["revision"] >= 1
    meta.unlink()
    assert run("space", "search", "kb", "Ray cluster", "--json", home=home).stdout == before


def test_removing_a_space_removes_its_index(space: Path, home: Path) -> None:
    folder = home / "ragmeter-files" / "spaces" / "1"
    assert (folder / "vectors.faiss").is_file()
    removed = run("space", "rm", "kb", home=home)
    assert removed.returncode == 0 and "removed space 'kb'" in removed.stdout
    assert not folder.exists()
    missing = run("space", "search", "kb", "x", home=home)
    assert missing.returncode == 2
    assert "no knowledge space 'kb'" in missing.stderr


def test_bad_input_is_one_clear_line(
    home: Path, judge_server: ScriptedJudgeServer, tmp_path: Path
) -> None:
    write_models(home, judge_server.url)
    unknown_embedder = run("space", "create", "s", "--embedder", "nope", home=home)
    assert unknown_embedder.returncode == 2
    assert "unknown model 'nope'" in unknown_embedder.stderr and "hashed" in unknown_embedder.stderr
    overlap = run(
        "space", "create", "s", "--chunk-size", "100", "--chunk-overlap", "100", home=home
    )
    assert overlap.returncode == 2 and "chunk_overlap (100) must be smaller" in overlap.stderr
    strategy = run("space", "create", "s", "--chunking", "words", home=home)
    assert strategy.returncode == 2 and "--chunking must be one of" in strategy.stderr
    assert run("space", "create", "s", "--embedder", "hashed", home=home).returncode == 0
    twice = run("space", "create", "s", home=home)
    assert twice.returncode == 2 and "already exists" in twice.stderr
    numeric = run("space", "create", "123", home=home)
    assert numeric.returncode == 2 and "not only digits" in numeric.stderr
    docx = tmp_path / "report.docx"
    docx.write_bytes(b"PK")
    unsupported = run("space", "add", "s", str(docx), str(tmp_path / "missing"), home=home)
    assert unsupported.returncode == 1
    assert "report.docx: unsupported file type" in unsupported.stderr
    assert "missing: no such file or folder" in unsupported.stderr
    assert "Traceback" not in unsupported.stderr


def test_large_spaces_get_an_hnsw_index(
    home: Path, judge_server: ScriptedJudgeServer, tmp_path: Path
) -> None:
    """``[knowledge] hnsw_threshold`` in ragmeter.toml switches the vector index to HNSW."""
    write_models(home, judge_server.url)
    with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
        config.write("\n[knowledge]\nhnsw_threshold = 3\n")
    corpus = write_corpus(tmp_path / "corpus")
    assert run("space", "create", "big", "--embedder", "hashed", home=home).returncode == 0
    assert run("space", "add", "big", str(corpus), home=home).returncode == 0
    meta = json.loads((home / "ragmeter-files" / "spaces" / "1" / "index.json").read_text())
    assert meta["vector_index"] == "hnsw" and meta["chunks"] > 3
    hits = json_lines(
        run(
            "space", "search", "big", "stand-alone environment or Ray cluster", "--json", home=home
        ).stdout
    )
    assert hits[0]["document"] == "guide/awel.md"
