"""The bundled demo: a small gardening and tea corpus of our own writing (three English and
three Chinese markdown documents) and a QA set of 30 questions that name the document
answering each one (six of them paraphrases or exact terms, which BM25 and vectors
respectively miss), so the recall scene can be tried offline with no key."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = [
    "DEMO_METRICS",
    "DEMO_RETRIEVERS",
    "DEMO_SPACE",
    "DEMO_TOP_K",
    "demo_corpus_path",
    "demo_qa_path",
]

#: the space the demo builds (and leaves behind to explore)
DEMO_SPACE = "ragmeter-demo"

DEMO_RETRIEVERS: tuple[str, ...] = ("vector", "bm25", "hybrid")

#: chunks retrieved per question: few enough that a retriever can miss the answering document
DEMO_TOP_K = 2

DEMO_METRICS: tuple[str, ...] = (
    "RetrieverHitRateMetric",
    "RetrieverMRRMetric",
    "RetrieverSimilarityMetric",
    "hit_rate@1",
    "ndcg@2",
)


def demo_corpus_path() -> Path:
    """Folder of the demo documents (``en/`` and ``zh/``)."""
    return Path(str(files("ragmeter.demo") / "corpus"))


def demo_qa_path() -> Path:
    """The demo QA set (JSONL: query, doc_name, metadata.language)."""
    return Path(str(files("ragmeter.demo") / "data" / "garden_qa.jsonl"))
