"""What every judge suite is read into: rows with a human label each, the language and the
groups (task, model) a card breaks its agreement down by, and the hash of the files read."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from ragmeter.errors import DatasetError

__all__ = ["LabelKind", "Suite", "SuiteItem", "content_hash", "jsonl_objects", "need"]

#: how a suite's human labels are read: 1/0 verdicts, or ordered grades
LabelKind = Literal["binary", "ordinal"]


@dataclass(frozen=True)
class SuiteItem:
    """One labelled case: ``row`` holds ragmeter row fields (query, response,
    retrieved_contexts, reference, metadata), ``human`` the people's label on the metric's
    scale, ``judge`` a label already given by a judge (suites whose judge is a file)."""

    row: dict[str, Any]
    human: float
    language: str | None
    groups: dict[str, str] = field(default_factory=dict)
    judge: float | None = None


@dataclass(frozen=True)
class Suite:
    """A human-labelled suite: its items, the metric it validates, how labels are read, the
    hash of the files it came from, and where the data comes from (attribution)."""

    name: str
    metric: str
    kind: LabelKind
    items: list[SuiteItem]
    content_hash: str
    source: str
    categories: tuple[float, ...] | None = None
    thresholds: tuple[float, ...] = ()

    @property
    def judge_from_file(self) -> bool:
        """Whether the judge's labels come with the suite (no judge is run)."""
        return bool(self.items) and all(item.judge is not None for item in self.items)


def content_hash(paths: Iterable[Path], variant: str = "") -> str:
    """sha256 over the files' names and bytes (and the reading's variant), hex."""
    digest = hashlib.sha256(variant.encode())
    for path in sorted(paths, key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def need(folder: Path, *names: str) -> list[Path]:
    """The files ``names`` of ``folder``; DatasetError naming the first one missing."""
    paths = [folder / name for name in names]
    for path in paths:
        if not path.is_file():
            raise DatasetError("file not found (is this a judge suites folder?)", source=str(path))
    return paths


def jsonl_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each non-blank line; DatasetError naming file and line."""
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise DatasetError(f"not JSON: {exc}", source=str(path), line=number) from None
            if not isinstance(obj, dict):
                raise DatasetError(
                    f"expected a JSON object, got {type(obj).__name__}",
                    source=str(path),
                    line=number,
                )
            yield number, obj
