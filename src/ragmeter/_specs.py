"""``split_specs``: metric names given as one comma-separated text, split at the commas
between specs, not inside a spec's parameters (``tool_correctness(a=true,b=true),mrr@10``)
nor inside trec_eval's parameter lists (``P.5,10,ndcg_cut.10``: ``P.5,10`` is one item)."""

from __future__ import annotations

import re

__all__ = ["split_outside_brackets", "split_specs"]

#: a trec_eval measure with parameters after a dot: ``P.5``, ``ndcg.1=3``, ``11pt_avg..25``
_TREC_FORM = re.compile(r"\s*[A-Za-z0-9_]+\.[^(]*\Z")
#: what may follow it after a comma as more of its parameters: ``10``, ``.2``, ``2=9``, ``p=0.5``
_MORE = re.compile(r"\s*(?:[A-Za-z]\w*=)?[-+]?[0-9.]+(?:=[-+]?[0-9.]+)?\s*\Z")


def split_outside_brackets(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, braces and brackets (unstripped)."""
    parts: list[str] = []
    depth, start = 0, 0
    for at, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append(text[start:at])
            start = at + 1
    parts.append(text[start:])
    return parts


def split_specs(text: str) -> list[str]:
    """The specs in ``text``, stripped, empty ones left out. A comma inside parentheses,
    braces or brackets belongs to its spec, and one inside a trec_eval parameter list to its
    measure."""
    joined: list[str] = []
    for spec in split_outside_brackets(text):
        if joined and _TREC_FORM.match(joined[-1]) and _MORE.match(spec):
            joined[-1] = f"{joined[-1]},{spec.strip()}"
        else:
            joined.append(spec)
    return [s.strip() for s in joined if s.strip()]
