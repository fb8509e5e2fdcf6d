"""Embedders: the local MiniLM default and OpenAI-compatible endpoints.

Names load on first use: the model's name costs nothing, numpy and the openai SDK load only
when something embeds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names

if TYPE_CHECKING:
    from ragmeter.embeddings.base import Embedder, normalize_rows
    from ragmeter.embeddings.by_name import (
        LOCAL_EMBEDDER_NAMES,
        embedder_by_name,
        embedder_from_config,
        is_local_embedder,
    )
    from ragmeter.embeddings.local import DEFAULT_MODEL_NAME, LocalEmbedder, default_model_path
    from ragmeter.embeddings.openai_compat import OpenAIEmbedder

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.embeddings.base": ("Embedder", "normalize_rows"),
        "ragmeter.embeddings.by_name": (
            "LOCAL_EMBEDDER_NAMES",
            "embedder_by_name",
            "embedder_from_config",
            "is_local_embedder",
        ),
        "ragmeter.embeddings.local": ("DEFAULT_MODEL_NAME", "LocalEmbedder", "default_model_path"),
        "ragmeter.embeddings.openai_compat": ("OpenAIEmbedder",),
    },
)

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
