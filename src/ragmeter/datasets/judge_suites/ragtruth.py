"""RAGTruth's test subset (faithfulness, English): one row per response, the context is the
source. The human label is faithful (1) iff the response has no hallucinated span (strict);
the lenient reading ignores spans marked ``implicit_true`` (true, but not in the source)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from ragmeter.datasets.judge_suites.base import Suite, SuiteItem, content_hash, jsonl_objects, need
from ragmeter.errors import DatasetError

__all__ = ["TASKS", "read_ragtruth"]

#: task -> (file, the question asked when the source has none)
TASKS: dict[str, tuple[str, str | None]] = {
    "qa": ("ragtruth_qa.jsonl", None),
    "summary": ("ragtruth_summary.jsonl", "Summarize the following passage."),
    "data2txt": ("ragtruth_data2txt.jsonl", "Write an overview of this business."),
}
_PASSAGE = re.compile(r"passage \d+:", re.IGNORECASE)
SOURCE = "RAGTruth (Niu et al., ACL 2024; MIT, Particle Media), as packaged by vectara/FaithJudge"


def _context(task: str, source: Any) -> tuple[str | None, list[str]]:
    """The question (QA only) and the contexts of a source."""
    if task == "qa":
        if not isinstance(source, dict) or not isinstance(source.get("passages"), str):
            raise ValueError("a QA source is an object with 'question' and 'passages'")
        parts = [p.strip() for p in _PASSAGE.split(source["passages"])]
        return str(source.get("question") or ""), [p for p in parts if p]
    if task == "summary":
        if not isinstance(source, str):
            raise ValueError("a summary source is a string")
        return None, [source]
    return None, [orjson.dumps(source).decode()]


def _faithful(labels: Any, lenient: bool) -> int:
    if not isinstance(labels, list):
        raise ValueError("'labels' is not a list")
    kept = [s for s in labels if not (lenient and isinstance(s, dict) and s.get("implicit_true"))]
    return 0 if kept else 1


def read_ragtruth(folder: Path, *, lenient: bool = False) -> Suite:
    """The 2,617 responses of ``folder`` (``ragtruth/``) as a faithfulness suite."""
    paths = need(folder, *(name for name, _ in TASKS.values()))
    items: list[SuiteItem] = []
    for (task, (_name, ask)), path in zip(TASKS.items(), paths, strict=True):
        for number, obj in jsonl_objects(path):
            try:
                question, contexts = _context(task, obj.get("source"))
                for response in obj["responses"]:
                    row = {
                        "query": question or ask,
                        "response": str(response["response"]),
                        "retrieved_contexts": contexts,
                        "metadata": {"source_id": obj.get("source_id"), "task": task},
                    }
                    model = str(response.get("model", ""))
                    human = _faithful(response.get("labels"), lenient)
                    items.append(SuiteItem(row, human, "en", {"task": task, "model": model}))
            except (KeyError, TypeError, ValueError) as exc:
                raise DatasetError(
                    f"not a RAGTruth source: {exc}", source=str(path), line=number
                ) from None
    name = "ragtruth-lenient" if lenient else "ragtruth"
    return Suite(name, "faithfulness", "binary", items, content_hash(paths, name), SOURCE)
