"""OpenAIEmbedder through the real openai SDK against an embeddings server on 127.0.0.1."""

from __future__ import annotations

import numpy as np
import pytest

import ragmeter
from ragmeter import EmbeddingError
from ragmeter.embeddings import Embedder, OpenAIEmbedder
from tests.integration.embedding_server import EmbeddingServer, hashed_vector


async def test_embeds_in_batches_in_order(embedding_server: EmbeddingServer) -> None:
    embedder = OpenAIEmbedder(
        "hash-64", base_url=embedding_server.base_url, api_key="k", batch_size=4
    )
    assert isinstance(embedder, Embedder)
    texts = [f"text number {i}" for i in range(10)] + [""]
    vectors = await embedder.embed(texts)
    await embedder.aclose()
    assert vectors.shape == (11, 64)
    assert len(embedding_server.requests) == 3  # 11 texts in batches of 4
    assert all(r["auth"] == "Bearer k" for r in embedding_server.requests)
    expected = np.asarray(hashed_vector("text number 7"), dtype=np.float32)
    np.testing.assert_allclose(vectors[7], expected / np.linalg.norm(expected), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors[:10], axis=1), 1.0, rtol=1e-6)


async def test_server_error_is_an_embedding_error(embedding_server: EmbeddingServer) -> None:
    embedder = OpenAIEmbedder("broken", base_url=embedding_server.base_url, max_retries=0)
    with pytest.raises(EmbeddingError, match=r"embedding request to http://127\.0\.0\.1"):
        await embedder.embed(["a"])
    await embedder.aclose()


def test_similarity_metric_through_remote_embeddings(embedding_server: EmbeddingServer) -> None:
    rows = [
        {
            "query": "q",
            "retrieved_contexts": ["the operator layer of awel", "weather today is sunny"],
            "reference_contexts": ["awel has an operator layer"],
        },
        {"query": "q2", "retrieved_contexts": [], "reference_contexts": ["x"]},
    ]
    embedder = OpenAIEmbedder("hash-64", base_url=embedding_server.base_url)
    report = ragmeter.evaluate(
        rows,
        ["retrieval_similarity", "retrieval_similarity(reduce=first)@1"],
        embedder=embedder,
    )
    first = report.scores("retrieval_similarity")[0]
    top1 = report.scores("retrieval_similarity(reduce=first)@1")[0]
    assert first is not None
    assert top1 is not None
    assert 0.0 < first < top1 <= 1.0  # the unrelated second chunk pulls the mean down
    assert report.scores("retrieval_similarity")[1] == 0.0  # nothing retrieved
    # each distinct text embedded once, all in one request
    assert len(embedding_server.requests) == 1
    assert len(embedding_server.requests[0]["body"]["input"]) == 4
