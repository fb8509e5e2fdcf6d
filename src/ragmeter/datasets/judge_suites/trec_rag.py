"""TREC RAG 2025 relevance (a judge from a file): the passage texts are not included, so no
judge can be run; the UMBRELA LLM's grades are compared with NIST's on the same 10,284
(query, passage) pairs, graded 0-4 (binary at grade >= 1 and >= 2)."""

from __future__ import annotations

from pathlib import Path

from ragmeter.datasets.judge_suites.base import Suite, SuiteItem, content_hash, need
from ragmeter.errors import DatasetError

__all__ = ["read_qrels", "read_trec_rag"]

SOURCE = (
    "TREC RAG 2025 qrels (NIST assessors) and UMBRELA LLM labels, from castorini/anserini-tools "
    "(no license stated: research data, not redistributed)"
)
NIST = "qrels.rag25.test.txt"
UMBRELA = "qrels.rag25.test-umbrela2.txt"


def read_qrels(path: Path) -> dict[tuple[str, str], int]:
    """``(query id, segment id) -> grade`` of a qrels file; DatasetError naming file and line."""
    grades: dict[tuple[str, str], int] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
                raise DatasetError(
                    "expected 'QUERY_ID ITER SEGMENT_ID GRADE'", source=str(path), line=number
                )
            key = (parts[0], parts[2])
            if key in grades:
                raise DatasetError(f"pair {key} judged twice", source=str(path), line=number)
            grades[key] = int(parts[3])
    return grades


def read_trec_rag(folder: Path) -> Suite:
    """NIST's grades (human) and UMBRELA's (judge) of ``folder`` (``trec_rag/``)."""
    nist_path, llm_path = need(folder, NIST, UMBRELA)
    nist, llm = read_qrels(nist_path), read_qrels(llm_path)
    only = set(nist) ^ set(llm)
    if only:
        raise DatasetError(
            f"{len(only)} pairs are judged in one file only, e.g. {sorted(only)[0]}",
            source=f"{nist_path} / {llm_path}",
        )
    items = [
        SuiteItem(
            {"query": qid, "metadata": {"segment": segment}},
            grade,
            "en",
            {},
            judge=float(llm[(qid, segment)]),
        )
        for (qid, segment), grade in nist.items()
    ]
    return Suite(
        "trec_rag",
        "context_relevance",
        "ordinal",
        items,
        content_hash([nist_path, llm_path]),
        SOURCE,
        categories=(0, 1, 2, 3, 4),
        thresholds=(1, 2),
    )
