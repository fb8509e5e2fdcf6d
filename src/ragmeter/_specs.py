"""``split_specs``: metric names given as one comma-separated text, split at the commas
between specs, not inside a spec's parameters (``tool_correctness(a=true,b=true),mrr@10``)."""

from __future__ import annotations

__all__ = ["split_specs"]


def split_specs(text: str) -> list[str]:
    """The specs in ``text``, stripped, empty ones left out. A comma inside parentheses
    belongs to its spec."""
    specs: list[str] = []
    depth, start = 0, 0
    for at, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            specs.append(text[start:at])
            start = at + 1
    specs.append(text[start:])
    return [s.strip() for s in specs if s.strip()]
