from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.integration.embedding_server import EmbeddingServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as server:
        yield server
