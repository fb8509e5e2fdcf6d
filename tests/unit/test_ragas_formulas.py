"""The parts of the RAGAS formulas that need an embedder, worked by hand from docs/concepts/metrics.md:

- answer_correctness = 0.75 * F1 + 0.25 * cosine(E(response), E(reference)),
  F1 = TP / (TP + 0.5 (FP + FN)); negative cosines count 0;
- answer_relevancy = mean cosine(E(query), E(q_i)) over the judge's 3 questions (negative
  cosines count 0); 0 when the judge finds the response noncommittal.

Vectors are fixed (unit length, so a dot product is the cosine) and the judge's replies are
fixed verdicts, so every number below follows from the formulas alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

import ragmeter

ROW = {"query": "q", "response": "r", "reference": "ref", "retrieved_contexts": ["c1"]}


class FixedVectors:
    """An embedder with one fixed vector per text; any other text is a test error."""

    name = "fixed-vectors"

    def __init__(self, vectors: dict[str, Sequence[float]]) -> None:
        self.vectors = {k: np.asarray(v, dtype=np.float32) for k, v in vectors.items()}
        self.seen: list[str] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return np.stack([self.vectors[t] for t in texts])


class FixedVerdicts:
    """A plain ``complete`` judge answering each task with fixed outputs."""

    def __init__(self, noncommittal: bool = False) -> None:
        verdict = lambda ok: {"reason": "", "verdict": ok}  # noqa: E731
        self.outputs = {
            "response_statements": ["s1", "s2", "s3", "s4"],
            "reference_statements": ["r1", "r2"],
            "questions": ["q1", "q2", "q3"],
            "noncommittal": noncommittal,
            # TP = 1, FP = 3 (response statements found in the reference)
            "response_in_reference": [
                verdict(True),
                verdict(False),
                verdict(False),
                verdict(False),
            ],
            # FN = 1 (reference statements missing from the response)
            "reference_in_response": [verdict(True), verdict(False)],
        }

    async def complete(self, prompt: str) -> str:
        keys = prompt.split("exactly the keys: ")[1].split("\n")[0].rstrip(".")
        wanted = [k.strip().strip('"') for k in keys.split(",")]
        return json.dumps({k: self.outputs[k] for k in wanted})


F1 = 1 / (1 + 0.5 * (3 + 1))  # TP=1, FP=3, FN=1 -> 1/3


@pytest.mark.parametrize(
    ("reference_vector", "cosine"),
    [
        ([0.6, 0.8, 0.0], 0.6),
        ([1.0, 0.0, 0.0], 1.0),
        ([0.0, 1.0, 0.0], 0.0),
        ([-0.8, 0.6, 0.0], 0.0),  # a negative cosine (-0.8) counts 0
    ],
)
@pytest.mark.parametrize("plan", ["fused", "separate"])
def test_answer_correctness_quarter_is_the_cosine(
    reference_vector: list[float], cosine: float, plan: str
) -> None:
    embedder = FixedVectors({"r": [1.0, 0.0, 0.0], "ref": reference_vector})
    report = ragmeter.evaluate(
        [ROW],
        "answer_correctness",
        judge=FixedVerdicts(),
        embedder=embedder,
        plan=plan,  # type: ignore[arg-type]
    )
    assert report.scores("answer_correctness") == [pytest.approx(0.75 * F1 + 0.25 * cosine)]
    assert sorted(embedder.seen) == ["r", "ref"]  # the response against the reference


def test_answer_correctness_weights() -> None:
    """0.75 * 1/3 + 0.25 * 0.6 = 0.4; the weight moves the mix, w=1 is the cosine alone."""
    embedder = FixedVectors({"r": [1.0, 0.0, 0.0], "ref": [0.6, 0.8, 0.0]})
    specs = "answer_correctness,answer_correctness(similarity_weight=1),answer_correctness(similarity_weight=0.5)"
    report = ragmeter.evaluate([ROW], specs, judge=FixedVerdicts(), embedder=embedder)
    assert report.scores("answer_correctness") == [pytest.approx(0.4)]
    assert report.scores("answer_correctness(similarity_weight=1)") == [pytest.approx(0.6)]
    assert report.scores("answer_correctness(similarity_weight=0.5)") == [
        pytest.approx(0.5 / 3 + 0.5 * 0.6)
    ]
    assert "F1=0.333 similarity=0.600" in (report.results("answer_correctness")[0].feedback or "")


def test_answer_relevancy_is_the_mean_cosine_of_the_questions() -> None:
    embedder = FixedVectors(
        {
            "q": [1.0, 0.0, 0.0],
            "q1": [1.0, 0.0, 0.0],  # cosine 1
            "q2": [0.6, 0.8, 0.0],  # cosine 0.6
            "q3": [-0.8, 0.6, 0.0],  # cosine -0.8, counts 0
        }
    )
    report = ragmeter.evaluate([ROW], "answer_relevancy", judge=FixedVerdicts(), embedder=embedder)
    assert report.scores("answer_relevancy") == [pytest.approx((1.0 + 0.6 + 0.0) / 3)]
    assert sorted(embedder.seen) == ["q", "q1", "q2", "q3"]
    assert report.results("answer_relevancy")[0].feedback == "questions: q1 | q2 | q3"


def test_a_noncommittal_response_scores_zero_whatever_the_cosines() -> None:
    same = [1.0, 0.0, 0.0]  # every question identical to the query: cosines of 1
    embedder = FixedVectors({"q": same, "q1": same, "q2": same, "q3": same})
    report = ragmeter.evaluate(
        [ROW], "answer_relevancy", judge=FixedVerdicts(noncommittal=True), embedder=embedder
    )
    assert report.scores("answer_relevancy") == [0.0]
    assert (
        report.results("answer_relevancy")[0].feedback
        == "the judge found the response noncommittal"
    )
    # no question embedded: the zero is the judge's verdict (the query may be, ahead of it)
    assert set(embedder.seen) <= {"q"}
