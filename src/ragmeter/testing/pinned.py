"""Pinned answers of the scripted judge: task outputs by key and vectors by text, given as
written instead of the scripted rules. With them a run replays a recorded judgement or a
worked example (a peer's test with its judge's verdicts) exactly, through every interface.

The file (``ragmeter judge-server --answers FILE``) is one JSON object::

    {"outputs": {"response_statements": ["Paris is the capital of France."],
                 "response_in_reference": [{"verdict": 1, "reason": ""}]},
     "embeddings": {"Paris is the capital of France.": [0.1, 0.2, 0.3]}}

A ragmeter task request asking for a key of ``outputs`` gets that value for it (its other
keys are answered by the rules); an embedding request gets the vector of each text listed
in ``embeddings`` (the others: hashed words).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError

__all__ = ["PinnedAnswers", "read_pinned"]


@dataclass(frozen=True)
class PinnedAnswers:
    """Task outputs by key and embedding vectors by text, answered as given."""

    outputs: Mapping[str, Any] = field(default_factory=dict)
    embeddings: Mapping[str, list[float]] = field(default_factory=dict)

    @classmethod
    def of(cls, given: Mapping[str, Any], source: str = "answers") -> PinnedAnswers:
        """Pinned answers from their JSON object; ConfigError naming what is wrong."""
        unknown = sorted(set(given) - {"outputs", "embeddings"})
        if unknown:
            raise ConfigError(
                f"{source}: unknown key(s) {', '.join(map(repr, unknown))}; "
                "known: 'outputs', 'embeddings'"
            )
        outputs = given.get("outputs", {})
        embeddings = given.get("embeddings", {})
        if not isinstance(outputs, Mapping):
            raise ConfigError(f"{source}: 'outputs' must be an object of task key -> output")
        if not isinstance(embeddings, Mapping):
            raise ConfigError(f"{source}: 'embeddings' must be an object of text -> vector")
        vectors = {str(text): _vector(value, f"{source}: embeddings[{text!r}]")
                   for text, value in embeddings.items()}  # fmt: skip
        return cls(dict(outputs), vectors)


def _vector(value: Any, where: str) -> list[float]:
    ok = (
        isinstance(value, list)
        and value
        and all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            for x in value
        )
    )
    if not ok:
        raise ConfigError(f"{where} must be a non-empty list of finite numbers")
    return [float(x) for x in value]


def read_pinned(path: Path) -> PinnedAnswers:
    """Pinned answers from a JSON file; ConfigError naming the file when it is unreadable."""
    try:
        given = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(given, dict):
        raise ConfigError(f"{path} must hold a JSON object with 'outputs' and/or 'embeddings'")
    return PinnedAnswers.of(given, str(path))
