"""Embedders by name: the local MiniLM, or an OpenAI-compatible model from ``ragmeter.toml``."""

from __future__ import annotations

from ragmeter.config import Settings, key_from_env, load_settings
from ragmeter.embeddings.base import Embedder
from ragmeter.embeddings.local import DEFAULT_MODEL_NAME, LocalEmbedder
from ragmeter.embeddings.openai_compat import OpenAIEmbedder
from ragmeter.errors import ConfigError

__all__ = ["LOCAL_EMBEDDER_NAMES", "embedder_by_name", "embedder_from_config", "is_local_embedder"]

#: names that mean the bundled all-MiniLM-L6-v2 (compared case-insensitively)
LOCAL_EMBEDDER_NAMES = frozenset({DEFAULT_MODEL_NAME.lower(), "local", "minilm"})


def is_local_embedder(name: str | None) -> bool:
    return name is None or name.lower() in LOCAL_EMBEDDER_NAMES


def embedder_by_name(
    name: str | None, *, settings: Settings | None = None, api_key_env: str | None = None
) -> Embedder:
    """The local model for ``None``/``local``/``all-MiniLM-L6-v2`` (on ``settings``'
    ``[knowledge] device``; without settings, the CPU); otherwise the ``[models.NAME]`` of
    ``ragmeter.toml`` (ConfigError naming the known models if absent)."""
    if name is None or name.lower() in LOCAL_EMBEDDER_NAMES:
        return LocalEmbedder(device=settings.knowledge.device if settings else "cpu")
    declared = (settings or load_settings()).model(name, hint="to use it as an embedding model")
    if api_key_env:
        declared = declared.model_copy(update={"api_key_env": api_key_env})
    return OpenAIEmbedder(
        declared.model,
        base_url=declared.base_url,
        api_key=declared.api_key(),
        timeout=declared.timeout,
    )


def embedder_from_config(
    model: str | None,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    settings: Settings | None = None,
) -> Embedder | None:
    """An OpenAI-compatible embedder by config name or URL; None means the local model."""
    if model is None:
        if base_url is not None:
            raise ConfigError("--embedding-base-url needs --embedding-model, the model id to ask")
        return None
    if base_url is not None:
        key = key_from_env(api_key_env, f"embedding model '{model}'")
        return OpenAIEmbedder(model, base_url=base_url, api_key=key)
    return embedder_by_name(model, settings=settings, api_key_env=api_key_env)
