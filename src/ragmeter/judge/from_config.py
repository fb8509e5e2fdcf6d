"""A judge engine from a name: a ``ragmeter.toml`` model, or a URL plus a model id."""

from __future__ import annotations

from ragmeter.config import Settings, key_from_env, load_settings
from ragmeter.judge.cache import JudgeCache
from ragmeter.judge.engine import DEFAULT_MAX_CONCURRENCY, JudgeEngine, JudgeSettings
from ragmeter.store.db import open_store

__all__ = ["judge_from_config"]


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
            api_key=key_from_env(api_key_env, f"judge '{model}'"),
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
                key_from_env(api_key_env, f"judge '{model}'") if api_key_env else declared.api_key()
            ),
            max_concurrency=(
                declared.max_concurrency or max_concurrency or DEFAULT_MAX_CONCURRENCY
            ),
            timeout=timeout or declared.timeout,
            requests_per_minute=declared.requests_per_minute,
            rate_store=settings.store_url() if declared.requests_per_minute else None,
        )
    store_cache = JudgeCache(open_store(settings.store_url())) if cache else None
    return JudgeEngine(judge, cache=store_cache)
