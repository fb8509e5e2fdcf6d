"""The peers' own cases for agents and RAGAS's formulas (``shared/peer_suites/vectors``): each
as the row ragmeter is given (in the peer's own field names), the metric, the judge's answers
pinned from the case, and the value the peer's test asserts."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ragmeter.metrics.llm.ragas import statement_f1
from ragmeter.testing import PinnedAnswers
from tests.peer_suites._differences import ROOT, Difference

#: the files of these cases, in ``vectors/``
AGENT_FILES = ("ragas_tool_calls.json", "deepeval_tool_correctness.json", "ragas_formulas.json")
#: tolerance where a case gives none (its value is exact in binary: 0, 1, 0.75, 0.5)
EXACT = 1e-12
_JUDGED = ("answer_correctness", "context_precision", "statement_f1")
MISSING = "shared/peer_suites/vectors not found in the checkout's folder or above it"
T = TypeVar("T")


def peer_suites() -> Path | None:
    """``shared/peer_suites`` in the checkout's folder or one above it
    (``$RAGMETER_PEER_SUITES`` first), or None."""
    given = os.environ.get("RAGMETER_PEER_SUITES")
    places = [Path(given)] if given else []
    places += [p / "shared" / "peer_suites" for p in (ROOT, *ROOT.parents)]
    return next((p for p in places if (p / "vectors").is_dir()), None)


def case_params(cases: Sequence[T], name: Callable[[T], str]) -> list[Any]:
    """One pytest parameter per case, named by ``name``; without the peers' cases a single
    ``peer-suites-missing`` one, which ``given`` skips (CI turns that skip into a failure)."""
    return [pytest.param(case, id=name(case)) for case in cases] or [
        pytest.param(None, id="peer-suites-missing")
    ]


def given(case: T | None) -> T:
    """A parameter's case, or a skip saying the peers' cases are missing."""
    if case is None:
        pytest.skip(MISSING)
    return case


@dataclass(frozen=True)
class PeerCase:
    """One case: ``row`` and ``metric`` for ragmeter; the peer's ``expected`` value (or
    ``expected_range``, open unless ``closed_right``), within ``tol``, or to ``places`` as
    unittest's ``assertAlmostEqual`` (the difference rounds to 0), or equal once ragmeter's
    score is rounded to ``round_to`` decimals; ``pinned``, the judge's answers of a judged
    case."""

    id: str
    metric: str
    row: dict[str, Any] = field(default_factory=dict)
    expected: float | None = None
    expected_range: tuple[float, float] | None = None
    closed_right: bool = False
    tol: float = EXACT
    round_to: int | None = None
    places: int | None = None
    pinned: PinnedAnswers | None = None
    counts: tuple[int, int, int] | None = None  # a statement F1's (tp, fp, fn)

    def check(self, score: float | None, listed: Difference | None, path: str) -> None:
        """AssertionError naming the case and the path unless ``score`` is the peer's value,
        or, for a case listed as a deliberate difference, ragmeter's documented value."""
        if listed is not None:
            same = (score is None and listed.ours is None) or (
                score is not None and listed.ours is not None and math.isclose(score, listed.ours)
            )
            assert same, (
                f"{self.id} ({path}): listed in docs/peer-differences.md with ours = "
                f"{listed.ours}, but ragmeter gives {score}"
            )
            return
        assert score is not None, f"{self.id} ({path}): no score, the peer gives {self.wanted}"
        assert self._agrees(score), (
            f"{self.id} ({path}): the peer gives {self.wanted}, ragmeter {score}"
        )

    def _agrees(self, score: float) -> bool:
        if self.expected_range is not None:
            low, high = self.expected_range
            return low < score and (score <= high if self.closed_right else score < high)
        assert self.expected is not None
        if self.places is not None:
            return round(abs(score - self.expected), self.places) == 0
        if self.round_to is not None:
            return round(score, self.round_to) == self.expected
        return abs(score - self.expected) <= self.tol

    @property
    def wanted(self) -> str:
        if self.expected_range is not None:
            low, high = self.expected_range
            return f"a value in ({low}, {high}{']' if self.closed_right else ')'}"
        if self.places is not None:
            return f"{self.expected} (to {self.places} places)"
        return f"{self.expected}" + (f" (to {self.round_to} decimals)" if self.round_to else "")

    @property
    def judged(self) -> bool:
        return self.pinned is not None


def _verdicts(*flags: int) -> list[dict[str, Any]]:
    return [{"verdict": flag, "reason": ""} for flag in flags]


def _statement_counts(case: dict[str, Any]) -> tuple[dict[str, Any], PinnedAnswers]:
    """RAGAS's F1 over statement counts as answer correctness without similarity: a judge
    that finds ``tp`` response statements in the reference, ``fp`` not, and ``fn`` reference
    statements not in the response."""
    tp, fp, fn = case["tp"], case["fp"], case["fn"]
    outputs = {
        "response_statements": [f"Response statement {i + 1}." for i in range(tp + fp)],
        "reference_statements": [f"Reference statement {i + 1}." for i in range(tp + fn)],
        "response_in_reference": _verdicts(*[1] * tp, *[0] * fp),
        "reference_in_response": _verdicts(*[1] * tp, *[0] * fn),
    }
    row = {
        "user_input": "What do the statements say?",
        "response": " ".join(outputs["response_statements"]),
        "reference": " ".join(outputs["reference_statements"]),
    }
    return row, PinnedAnswers(outputs)


def _case(source: str, raw: dict[str, Any]) -> PeerCase:
    common: dict[str, Any] = {
        "id": raw["id"],
        "expected": raw.get("expected"),
        "expected_range": tuple(raw["expected_range"]) if "expected_range" in raw else None,
        "closed_right": bool(raw.get("range_closed_right")),
        "tol": raw.get("tol", EXACT),
        "round_to": raw.get("round"),
    }
    kind = raw.get("kind")
    if source == "ragas_tool_calls.json":  # a MultiTurnSample's fields
        row = {k: raw[k] for k in ("user_input", "reference_tool_calls", "reference") if k in raw}
        return PeerCase(metric=raw["metric"], row=row, **common)
    if source == "deepeval_tool_correctness.json":  # an LLMTestCase's fields
        return PeerCase(metric=raw["metric"], row=dict(raw["case"]), **common)
    if kind == "ids":  # RAGAS's id-based SingleTurnSample
        row = {
            "retrieved_context_ids": raw["retrieved_ids"],
            "reference_context_ids": raw["reference_ids"],
        }
        return PeerCase(metric=raw["metric"], row=row, **common)
    if kind == "statement_f1":
        row, pinned = _statement_counts(raw)
        counts = (raw["tp"], raw["fp"], raw["fn"])
        metric = "answer_correctness(similarity_weight=0)"
        return PeerCase(metric=metric, row=row, pinned=pinned, counts=counts, **common)
    if kind in _JUDGED:
        row = dict(raw["row"])
        vectors = {}
        if "embedding" in raw:  # the test's mock: every text embeds to this vector
            vectors = {row[k]: raw["embedding"] for k in ("response", "reference") if k in row}
        pinned = PinnedAnswers(raw["outputs"], vectors)
        return PeerCase(metric=raw["metric"], row=row, pinned=pinned, **common)
    raise ValueError(f"{source}: case {raw['id']!r} of unknown kind {kind!r}")


def agent_cases(folder: Path | None = None) -> list[PeerCase]:
    """Every case of the agent and RAGAS-formula files, in file order; [] without the
    folder."""
    folder = folder or peer_suites()
    if folder is None:
        return []
    cases = []
    for name in AGENT_FILES:
        data = json.loads((folder / "vectors" / name).read_text(encoding="utf-8"))
        cases += [_case(name, raw) for raw in data["cases"]]
    return cases


def formula_value(case: PeerCase) -> float:
    """A statement-count case's F1 from ragmeter's formula itself."""
    assert case.counts is not None
    return statement_f1(*case.counts)
