"""The default local embedder: MiniLM from the installed package, offline, loaded once."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.embeddings import Embedder, LocalEmbedder, default_model_path
from ragmeter.embeddings.local import load_model

pytestmark = pytest.mark.slow


async def test_local_embeddings_are_unit_and_meaningful() -> None:
    embedder = LocalEmbedder()
    assert isinstance(embedder, Embedder)
    vectors = await embedder.embed(
        [
            "How do I turn a compost heap?",
            "Turning the compost pile adds oxygen.",
            "Stock prices fell.",
        ]
    )
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    assert (await embedder.embed([])).shape == (0, 384)


def test_model_is_loaded_once_per_process() -> None:
    path = default_model_path()
    assert load_model(path) is load_model(path)
    assert path.name == "model"
    assert (path / "model.safetensors").is_file()
