"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint, through the ``openai`` SDK."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmeter._retry import RetryPolicy, TryAgain, retry_after, retryable_status
from ragmeter.embeddings.base import normalize_rows
from ragmeter.errors import ConfigError, EmbeddingError, public_url

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder:
    """Batches texts into requests of ``batch_size`` and sends up to ``max_concurrency`` at once;
    a failed request is tried again under the shared retry policy (``max_retries`` more times)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 128,
        max_concurrency: int = 4,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None:
            if base_url is None:
                raise ConfigError(
                    "the OpenAI embedder needs an API key (api_key or OPENAI_API_KEY) "
                    "or the base_url of a server that needs none"
                )
            key = "no-key"  # local OpenAI-compatible servers often need none
        if batch_size < 1 or max_concurrency < 1:
            raise ConfigError("batch_size and max_concurrency must be at least 1")
        if max_retries < 0:
            raise ConfigError("max_retries must not be negative")
        self.model = model
        self.base_url = base_url
        self._batch_size = batch_size
        self._max_concurrency = max_concurrency
        self._client_options = {
            "base_url": base_url,
            "api_key": key,
            "timeout": timeout,
            "max_retries": 0,  # retries are the shared policy's, below
        }
        self.retry = RetryPolicy(attempts=max_retries + 1)
        self._client: openai.AsyncOpenAI | None = None
        self.requests = 0

    def _ensure_client(self) -> openai.AsyncOpenAI:
        """The client, made on first use in the running event loop (again after ``aclose``)."""
        import openai  # heavy (its types take ~1 s): imported on first use

        if self._client is None:
            self._client = openai.AsyncOpenAI(**self._client_options)  # type: ignore[arg-type]
        return self._client

    @property
    def name(self) -> str:
        return self.model

    @property
    def where(self) -> str:
        """The endpoint as messages show it: no credentials, no query string."""
        return public_url(self.base_url) if self.base_url else "the OpenAI API"

    async def _embed_batch(self, batch: list[str], semaphore: asyncio.Semaphore) -> np.ndarray:
        async def once(_attempt: int) -> Any:
            async with semaphore:  # not held while waiting to try again
                return await self._request(batch)

        try:
            response = await self.retry.run(once)
        except TryAgain as exc:
            raise EmbeddingError(
                f"embedding request to {self.where} failed after {self.retry.attempts} tries: "
                f"{exc.reason}"
            ) from None
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise EmbeddingError(
                f"embedding server returned {len(data)} vectors for {len(batch)} texts"
            )
        return np.asarray([item.embedding for item in data], dtype=np.float32)

    async def _request(self, batch: list[str]) -> Any:
        """One request: the reply; TryAgain when the retry policy says another try may help."""
        import openai  # heavy (its types take ~1 s): imported on first use

        try:
            response = await self._ensure_client().embeddings.create(
                model=self.model, input=batch, encoding_format="float"
            )
        except openai.APIConnectionError as exc:  # timeouts too
            raise TryAgain(str(exc.__cause__ or exc)) from None
        except openai.APIStatusError as exc:
            from ragmeter.judge.chat import told  # its status, type and size, never its body

            if retryable_status(exc.status_code):
                raise TryAgain(
                    told(exc.response), retry_after=retry_after(exc.response.headers)
                ) from None
            raise EmbeddingError(
                f"embedding request to {self.where} failed: {told(exc.response)}"
            ) from None
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"embedding request to {self.where} failed: {exc}") from exc
        self.requests += 1
        return response

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        # the API rejects empty strings; a single space embeds as "nothing"
        cleaned = [text if text.strip() else " " for text in texts]
        semaphore = asyncio.Semaphore(self._max_concurrency)
        batches = [
            cleaned[i : i + self._batch_size] for i in range(0, len(cleaned), self._batch_size)
        ]
        parts = await asyncio.gather(*(self._embed_batch(b, semaphore) for b in batches))
        return normalize_rows(np.concatenate(parts, axis=0))

    async def aclose(self) -> None:
        """Close the connections; the next call opens new ones."""
        if self._client is not None:
            await self._client.close()
            self._client = None
