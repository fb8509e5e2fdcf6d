"""The recall scene: ``ragmeter eval --space`` with three retrievers side by side, checked
against the space's own search and chunk listing; the local MiniLM embeds."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

import ragmeter
from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.planning.targets import RecallTarget
from ragmeter.runs.views.browse import row_detail
from tests.integration.helpers import dbgpt_docs, json_lines, run, write_corpus

pytestmark = pytest.mark.slow

QA = [
    {"query": "Which layers make up AWEL?", "doc_name": "guide/awel.md"},
    {"query": "MapOperator and JoinOperator in a DAG", "doc_name": "notes/awel.md"},
    {"query": "乌龙茶用什么水温冲泡？", "doc_name": "tea.md"},
    {"query": "What does a compost heap need?", "doc_name": "readme.txt"},
    {"query": "Where do AWEL workflows run?", "doc_name": ["guide/awel.md", "page.html"]},
]
METRICS = "RetrieverHitRateMetric,RetrieverMRRMetric,RetrieverSimilarityMetric"


@pytest.fixture(scope="module")
def recall_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recall")
    corpus = write_corpus(root / "corpus")
    home = root / "home"
    assert run("space", "create", "kb", home=home).returncode == 0
    added = run("space", "add", "kb", str(corpus), home=home)
    assert added.returncode == 0, added.stderr
    (root / "qa.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in QA), encoding="utf-8"
    )
    return home


@pytest.fixture
def in_home(recall_home: Path, monkeypatch: pytest.MonkeyPatch) -> KnowledgeBase:
    monkeypatch.setenv("RAGMETER_HOME", str(recall_home))
    return KnowledgeBase()


def test_three_retrievers_side_by_side(recall_home: Path, in_home: KnowledgeBase) -> None:
    out = recall_home.parent / "r.jsonl"
    result = run(
        "eval",
        str(recall_home.parent / "qa.jsonl"),
        "--space",
        "kb",
        "--top-k",
        "3",
        "--retriever",
        "vector,bm25,hybrid",
        "--metrics",
        METRICS,
        "--out",
        str(out),
        home=recall_home,
    )
    assert result.returncode == 0, result.stderr
    header = next(
        line for line in result.stdout.splitlines() if "vector" in line and "hybrid" in line
    )
    assert header.index("vector") < header.index("bm25") < header.index("hybrid")
    lines = json_lines(out.read_text(encoding="utf-8"))
    assert len(lines) == 3 * len(QA) * 3
    searcher = SpaceSearcher(in_home, "kb")
    for retriever in ("vector", "bm25", "hybrid"):
        hits = asyncio.run(
            searcher.search([r["query"] for r in QA], top_k=3, retriever=retriever)  # type: ignore[arg-type]
        )
        mine = [x for x in lines if x["retriever"] == retriever]
        for index, row in enumerate(QA):
            by_metric = {x["metric_name"]: x for x in mine if x["row_index"] == index}
            predicted = [h.content for h in hits[index]]
            assert by_metric["RetrieverHitRateMetric"]["prediction"] == predicted
            names = [row["doc_name"]] if isinstance(row["doc_name"], str) else row["doc_name"]
            relevant = {c.content for n in names for c in in_home.document_chunks("kb", n)}
            ranks = [r for r, text in enumerate(predicted, start=1) if text in relevant]
            assert by_metric["RetrieverHitRateMetric"]["score"] == (1.0 if ranks else 0.0)
            assert by_metric["RetrieverMRRMetric"]["score"] == (1 / ranks[0] if ranks else 0.0)
            assert sorted(
                by_metric["RetrieverMRRMetric"]["raw_dataset"]["reference_contexts"]
            ) == sorted(relevant)
            assert 0.0 <= by_metric["RetrieverSimilarityMetric"]["score"] <= 1.0


def test_a_stored_space_run_keeps_what_was_retrieved_for_the_row_view(
    recall_home: Path, in_home: KnowledgeBase
) -> None:
    """The Row view of a run over a space: the chunks the space returned, in rank order with
    their ids, relevance marked by id against the chunks the row's doc_name resolved to, as
    hit_rate judged it."""
    result = run(
        "eval", str(recall_home.parent / "qa.jsonl"), "--space", "kb", "--top-k", "3",
        "--retriever", "bm25", "-m", "hit_rate,mrr", home=recall_home,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.split("run ", 1)[1].split()[0]
    hits = asyncio.run(
        SpaceSearcher(in_home, "kb").search([r["query"] for r in QA], top_k=3, retriever="bm25")
    )
    relevant_rows = 0
    for index in range(len(QA)):
        row = row_detail(in_home.store, run_id, index)
        assert row.match == "id"
        assert [(c.rank, c.id, c.text) for c in row.contexts] == [
            (rank, str(h.chunk_id), h.content) for rank, h in enumerate(hits[index], 1)
        ]
        hit_rate = next(r.score for r in row.results if r.metric_name == "hit_rate")
        assert hit_rate == float(any(c.relevant for c in row.contexts))
        relevant_rows += hit_rate == 1.0
    assert relevant_rows >= 3  # bm25 finds most of these documents


def test_stored_vectors_give_the_same_similarity(in_home: KnowledgeBase) -> None:
    """The recall scene reuses the space's chunk vectors; embedding afresh agrees."""
    searcher = SpaceSearcher(in_home, "kb")
    seeded = ragmeter.evaluate(
        QA, "RetrieverSimilarityMetric", target=RecallTarget(searcher, top_k=3)
    )
    produced = [
        {"query": r.query, "retrieved_contexts": r.prediction, "reference_contexts": r.contexts}
        for r in seeded.results()
    ]
    fresh = ragmeter.evaluate(produced, "RetrieverSimilarityMetric")
    for a, b in zip(
        seeded.scores("RetrieverSimilarityMetric"),
        fresh.scores("RetrieverSimilarityMetric"),
        strict=True,
    ):
        assert a == pytest.approx(b, abs=1e-5)


def test_evaluate_from_python_with_a_space(in_home: KnowledgeBase) -> None:
    report = ragmeter.evaluate(QA, "hit_rate,mrr", space="kb", retriever="bm25", top_k=3)
    assert report.target == "bm25"
    assert all(len(r.prediction) <= 3 for r in report.results("mrr"))
    assert report.scores("hit_rate")[2] == 1.0  # the Chinese question finds tea.md by its words


def test_unknown_or_ambiguous_doc_name_names_the_row_and_candidates(recall_home: Path) -> None:
    path = recall_home.parent / "bad.jsonl"
    path.write_text(
        '{"query": "q", "doc_name": "tea.md"}\n{"query": "q2", "doc_name": "awel.md"}\n',
        encoding="utf-8",
    )
    ambiguous = run("eval", str(path), "--space", "kb", "-m", "mrr", home=recall_home)
    assert ambiguous.returncode == 2
    assert f"{path} line 2 (row 1) field 'doc_name'" in ambiguous.stderr
    assert "guide/awel.md, notes/awel.md" in ambiguous.stderr
    path.write_text('{"query": "q", "doc_name": "teas.md"}\n', encoding="utf-8")
    unknown = run("eval", str(path), "--space", "kb", "-m", "mrr", home=recall_home)
    assert unknown.returncode == 2
    assert "no document 'teas.md' in space 'kb'" in unknown.stderr
    assert "did you mean guide/tea.md?" in unknown.stderr
    wrong = run(
        "eval", str(path), "--space", "kb", "--retriever", "dense", "-m", "mrr", home=recall_home
    )
    assert wrong.returncode == 2 and "unknown retriever 'dense'" in wrong.stderr


DBGPT_FILES = (
    "awel/awel.md",
    "awel/why_use_awel.md",
    "awel/get_started.md",
    "modules/rag.md",
    "getting-started/deploy/docker.md",
    "faq/kbqa.md",
)


def test_the_dbgpt_recall_example(tmp_path: Path) -> None:
    """DB-GPT's documented recall request, its body used as the dataset, over a space of
    DB-GPT's own docs holding awel.md."""
    docs = dbgpt_docs()
    if docs is None:
        pytest.skip("DB-GPT's docs corpus (shared/corpora/dbgpt-docs) is not beside the checkout")
    corpus = tmp_path / "corpus"
    for name in DBGPT_FILES:
        target = corpus / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(docs / "en" / name, target)
    home = tmp_path / "home"
    assert run("space", "create", "dbgpt", home=home).returncode == 0
    assert run("space", "add", "dbgpt", str(corpus), home=home).returncode == 0
    chunks = json_lines(run("space", "chunks", "dbgpt", "awel.md", home=home).stdout)
    assert chunks[0]["content"].startswith('"What is AWEL?": Agentic Workflow Expression Language')
    assert any(c["content"].startswith('"What is AWEL?-AWEL Design": ') for c in chunks)
    body = {
        "scene_key": "recall",
        "scene_value": "dbgpt",
        "context": {"top_k": 5},
        "evaluate_metrics": METRICS.split(","),
        "datasets": [{"query": "what awel talked about", "doc_name": "awel.md"}],
    }
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    result = run(
        "eval",
        str(request),
        "--space",
        "dbgpt",
        "--top-k",
        "5",
        "-m",
        METRICS,
        "--out",
        str(out),
        home=home,
    )
    assert result.returncode == 0, result.stderr
    lines = {x["metric_name"]: x for x in json_lines(out.read_text(encoding="utf-8"))}
    assert lines["RetrieverHitRateMetric"]["score"] == 1.0
    assert lines["RetrieverMRRMetric"]["score"] > 0
    assert len(lines["RetrieverMRRMetric"]["prediction"]) == 5
    assert lines["RetrieverMRRMetric"]["raw_dataset"]["doc_name"] == "awel.md"
