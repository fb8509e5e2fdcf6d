"""Input details: user embedders' vectors are normalised, sync wrappers work inside a
running loop, URLs lose their passwords, and files with a BOM or multi-line cells read right."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from ragmeter._sync import run_sync
from ragmeter.datasets import load_dataset
from ragmeter.errors import redact
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.retrieval.similarity import RetrieverSimilarityMetric
from ragmeter.runs.evaluate import run_sync as reexported


class _Unnormalised:
    """A user's embedder that returns raw, non-unit vectors (one axis per known word)."""

    name = "raw"
    words = ("tea", "water", "heat")

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            [[10.0 * text.split().count(w) for w in self.words] for text in texts],
            dtype=np.float32,
        )


def test_a_user_embedders_vectors_are_normalised_for_cosines() -> None:
    metric = RetrieverSimilarityMetric(embedder=_Unnormalised())
    retrieved, reference = ["tea tea water"], ["tea water water"]
    expected = (2 * 1 + 1 * 2) / (np.sqrt(5) * np.sqrt(5))  # cosine of (2,1,0) and (1,2,0)
    rows = load_dataset(
        [{"query": "q", "retrieved_contexts": retrieved, "reference_contexts": reference}]
    )
    (outcome,) = asyncio.run(metric.compute_rows(list(rows), EvaluationContext()))
    assert outcome.score == pytest.approx(expected, abs=1e-6)


def test_sync_compute_works_where_an_event_loop_is_running() -> None:
    metric = RetrieverSimilarityMetric(embedder=_Unnormalised())

    async def in_a_notebook() -> float | None:
        return metric.sync_compute(["tea"], ["tea"]).score

    assert asyncio.run(in_a_notebook()) == pytest.approx(1.0)


def test_run_sync_is_one_helper_shared_with_the_runs_layer() -> None:
    assert reexported is run_sync

    async def three() -> int:
        return 3

    async def nested() -> int:
        return run_sync(three())

    assert run_sync(three()) == 3 and asyncio.run(nested()) == 3


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("judge http://bob:s3cret@judge:8000/v1 failed", "judge http://judge:8000/v1 failed"),
        ("postgresql+psycopg://u:p@ss@db:5432/x", "postgresql+psycopg://db:5432/x"),
        ("https://token@github.com/org", "https://github.com/org"),
        ("http://host:80/path@x and ftp://a@b", "http://host:80/path@x and ftp://b"),
        ("no URL, user:pass@host stays", "no URL, user:pass@host stays"),
    ],
)
def test_redact_strips_credentials_from_urls(text: str, shown: str) -> None:
    assert redact(text) == shown
