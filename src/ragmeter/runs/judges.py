"""Judge and embedder from names: ``ragmeter.toml`` models, or a URL plus a model id."""

from __future__ import annotations

import os

from ragmeter.config import Settings, load_settings
from ragmeter.embeddings import Embedder, OpenAIEmbedder, embedder_by_name
from ragmeter.errors import ConfigError
from ragmeter.judge.cache import JudgeCache
from ragmeter.judge.engine import DEFAULT_MAX_CONCURRENCY, JudgeEngine, JudgeSettings
from ragmeter.store import open_store

__all__ = ["embedder_from_config", "judge_from_config"]


def _key_from_env(variable: str | None, what: str) -> str:
    if variable is None:
        return "EMPTY"  # local OpenAI-compatible servers accept any key
    key = os.environ.get(variable)
    if not key:
        raise ConfigError(f"{what} reads its API key from ${variable}, which is not set")
    return key


def judge_from_config(
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    cache: bool = True,
    settings: Settings | None = None,
) -> JudgeEngine:
    """A judge engine for ``model``: a ``[models.NAME]`` of ``ragmeter.toml``, or, with
    ``base_url``, the model id at that OpenAI-compatible endpoint. Fails before any request
    when the name is unknown or the key variable is unset. Requests in flight to the model
    are bounded per process by a declared model's own ``max_concurrency``, else by
    ``max_concurrency`` (the command line's ``--max-concurrency``), else 16. The service
    gives none: a run's ``parallel_num`` never sets a model's limit for the others."""
    settings = settings or load_settings()
    if base_url is not None:
        judge = JudgeSettings(
            model=model,
            base_url=base_url,
            api_key=_key_from_env(api_key_env, f"judge '{model}'"),
            max_concurrency=max_concurrency or DEFAULT_MAX_CONCURRENCY,
            timeout=timeout or 60.0,
        )
    else:
        declared = settings.model(model)
        judge = JudgeSettings(
            name=model,
            model=declared.model,
            base_url=declared.base_url,
            api_key=(
                _key_from_env(api_key_env, f"judge '{model}'")
                if api_key_env
                else declared.api_key()
            ),
            max_concurrency=(
                declared.max_concurrency or max_concurrency or DEFAULT_MAX_CONCURRENCY
            ),
            timeout=timeout or declared.timeout,
        )
    store_cache = JudgeCache(open_store(settings.store_url())) if cache else None
    return JudgeEngine(judge, cache=store_cache)


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
        key = _key_from_env(api_key_env, f"embedding model '{model}'")
        return OpenAIEmbedder(model, base_url=base_url, api_key=key)
    return embedder_by_name(model, settings=settings, api_key_env=api_key_env)
