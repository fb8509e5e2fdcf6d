"""The judge's reasoning for one result (``details``): groups of items (statements with their
verdicts, generated questions with their cosines, per-context verdicts, a 0-5 feedback) and a
few named numbers. One shape for every metric so that the dashboard and the HTML report render
them all with one function; texts and item counts are capped so a hostile response cannot
blow up the store.

::

    {"groups": [{"kind": "response_statements",
                 "items": [{"text": ..., "verdict": true, "reason": ..., "value": null}]}],
     "values": {"tp": 3, "fp": 1, "fn": 0, "f1": 0.857, "similarity": 0.91}}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

__all__ = [
    "CONTEXT_CHARS",
    "DETAIL_KINDS",
    "MAX_ITEMS",
    "TEXT_CHARS",
    "DetailKind",
    "Details",
    "cut_text",
    "details",
    "group",
    "item",
    "verdict_items",
]

DetailKind = Literal[
    "response_statements",
    "reference_statements",
    "questions",
    "contexts",
    "feedback",
    "goal",
    "task",
    "topics_refused",
    "topics_in_reference",
    "tool_calls",
    "turns",
]
DETAIL_KINDS: tuple[str, ...] = get_args(DetailKind)
#: a statement's, question's or reason's characters kept
TEXT_CHARS = 1000
#: a retrieved context's characters kept (the row holds the whole context)
CONTEXT_CHARS = 500
#: items kept per group
MAX_ITEMS = 200

Details = dict[str, Any]


def cut_text(text: Any, limit: int) -> str:
    """``text`` as a string of at most ``limit`` characters (ending in "…" when cut)."""
    value = text if isinstance(text, str) else str(text)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _cut(text: Any, limit: int) -> str | None:
    return None if text is None else cut_text(text, limit)


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def item(
    text: Any,
    verdict: bool | None = None,
    reason: Any = None,
    value: float | None = None,
    *,
    chars: int = TEXT_CHARS,
) -> dict[str, Any]:
    """One item: ``text`` (cut to ``chars``), a verdict (None: no verdict), the judge's
    reason and a number (a question's cosine, a context's rank), each cut or checked."""
    return {
        "text": _cut(text, chars) or "",
        "verdict": None if verdict is None else bool(verdict),
        "reason": _cut(reason, TEXT_CHARS) or None,
        "value": _number(value),
    }


def group(kind: DetailKind, items: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A group of ``kind``, its first ``MAX_ITEMS`` items."""
    kept: list[dict[str, Any]] = []
    for one in items:
        if len(kept) == MAX_ITEMS:
            break
        kept.append(one)
    return {"kind": kind, "items": kept}


def verdict_items(
    statements: Sequence[Any], verdicts: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Statements with the judge's verdict and reason on each (``MAX_ITEMS`` at most)."""
    return [
        item(text, bool(v.get("verdict")), v.get("reason"))
        for text, v in zip(statements[:MAX_ITEMS], verdicts[:MAX_ITEMS], strict=False)
    ]


def details(*groups: dict[str, Any], values: Mapping[str, Any] | None = None) -> Details:
    """The details of one result: ``groups`` in display order and named numbers (a
    non-finite or non-numeric value is kept as null)."""
    out: Details = {"groups": list(groups)}
    if values:
        out["values"] = {str(k): _number(v) for k, v in values.items()}
    return out
