"""Tolerant reading of a judge's JSON reply: code fences, prose around the object."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["extract_json"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON object in ``text``; ValueError saying what is wrong if there is none."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    last_error = "the reply holds no JSON object"
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError as exc:
                last_error = f"invalid JSON ({exc.msg}, character {exc.pos})"
            else:
                if isinstance(value, dict):
                    return value
            start = candidate.find("{", start + 1)
    raise ValueError(last_error)
