"""The local model run by torch, through sentence-transformers, for a GPU.

The numpy encoder (``_bert``) is the CPU path; this one loads the same model folder with
``SentenceTransformer`` (offline: ``local_files_only``) on a torch device. The device is a
parameter so that tests can run this code on the CPU, where CI has no GPU; on ``cpu`` it gives
the numpy path's vectors within float32 rounding."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["TorchEncoder", "cuda_problem"]


def cuda_problem() -> str | None:
    """Why torch cannot encode on a CUDA GPU here (None: it can). Imports torch."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA GPU"
    return None


class TorchEncoder:
    """A sentence-transformers model folder on a torch ``device`` (``cuda``, ``cpu``):
    mean-pooled, L2-normalised float32 vectors, as the numpy encoder gives."""

    def __init__(self, folder: Path, device: str) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        self.device = device
        bars = transformers_logging.is_progress_bar_enabled()  # no "Loading weights" bar
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        try:
            self._model = SentenceTransformer(str(folder), device=device, local_files_only=True)
        finally:
            if bars:
                transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
        model = self._model  # sentence-transformers 6 renamed get_sentence_embedding_dimension
        dimension = (
            model.get_embedding_dimension()
            if hasattr(model, "get_embedding_dimension")
            else model.get_sentence_embedding_dimension()
        )
        if dimension is None:
            raise ValueError(f"{folder} declares no sentence embedding dimension")
        self._dimension = int(dimension)

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Unit vectors ``(len(texts), dimension)``; sentence-transformers batches the texts
        by length."""
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
