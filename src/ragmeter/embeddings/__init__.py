"""Embedders: the local MiniLM default and OpenAI-compatible endpoints."""

from ragmeter.embeddings.base import Embedder, normalize_rows
from ragmeter.embeddings.by_name import (
    LOCAL_EMBEDDER_NAMES,
    embedder_by_name,
    embedder_from_config,
    is_local_embedder,
)
from ragmeter.embeddings.local import DEFAULT_MODEL_NAME, LocalEmbedder, default_model_path
from ragmeter.embeddings.openai_compat import OpenAIEmbedder

__all__ = [
    "DEFAULT_MODEL_NAME",
    "LOCAL_EMBEDDER_NAMES",
    "Embedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "default_model_path",
    "embedder_by_name",
    "embedder_from_config",
    "is_local_embedder",
    "normalize_rows",
]
