"""UHGEval concise (hallucination in Chinese news continuation): each record gives two rows,
its hallucinated continuation (label 0, not faithful) and the article's real next sentence
(label 1), 1,000 + 1,000. The context is the article's beginning and its remainder *after*
the real next sentence (the remainder opens with it in every record): given verbatim, it
would make the real half a copy a judge finds without judging."""

from __future__ import annotations

from pathlib import Path

from ragmeter.datasets.judge_suites.base import Suite, SuiteItem, content_hash, jsonl_objects, need
from ragmeter.errors import DatasetError

__all__ = ["read_uhgeval"]

SOURCE = (
    "UHGEval (Liang et al., ACL 2024; Apache-2.0, IAAR Shanghai; news text of Xinhua News "
    "Agency, research use only)"
)
_FIELDS = ("headLine", "newsBeginning", "hallucinatedContinuation", "realContinuation")


def _after(obj: dict[str, object]) -> str:
    """The article's remainder without its first sentence, the real continuation."""
    remainder = str(obj.get("newsRemainder") or "").strip()
    real = str(obj.get("realContinuation") or "").strip()
    return remainder[len(real) :].strip() if real and remainder.startswith(real) else remainder


def read_uhgeval(folder: Path) -> Suite:
    """The 2,000 continuations of ``folder`` (``uhgeval/``) as a faithfulness suite."""
    (path,) = need(folder, "dataset_uhgeval_concise.jsonl")
    items: list[SuiteItem] = []
    for number, obj in jsonl_objects(path):
        for name in _FIELDS:
            if not isinstance(obj.get(name), str):
                raise DatasetError("expected a string", source=str(path), line=number, field=name)
        context = obj["newsBeginning"].strip() + "\n" + _after(obj)
        base = {
            "query": f"续写这篇新闻（{obj['headLine'].strip()}）的下一句。",
            "retrieved_contexts": [context.strip()],
        }
        model = str(obj.get("generatedBy") or "")
        for response, human, writer in (
            (obj["hallucinatedContinuation"], 0, model),
            (obj["realContinuation"], 1, "real"),
        ):
            meta = {"id": obj.get("id"), "type": obj.get("type")}
            row = {**base, "response": response.strip(), "metadata": meta}
            groups = {"task": str(obj.get("type") or ""), "model": writer}
            items.append(SuiteItem(row, human, "zh", groups))
    return Suite("uhgeval", "faithfulness", "binary", items, content_hash([path]), SOURCE)
