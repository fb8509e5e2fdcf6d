"""Embedders: the local MiniLM default and OpenAI-compatible endpoints."""

from ragmeter.embeddings.base import Embedder, normalize_rows
from ragmeter.embeddings.local import DEFAULT_MODEL_NAME, LocalEmbedder, default_model_path
from ragmeter.embeddings.openai_compat import OpenAIEmbedder

__all__ = [
    "DEFAULT_MODEL_NAME",
    "Embedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "default_model_path",
    "normalize_rows",
]
