"""The lexical index of a space: BM25 (``bm25s``) over our tokens (stemmed English, jieba
Chinese). Chunks sharing no token with a query are not returned; a space whose chunks hold
only stop words has no BM25 matrices (bm25s cannot index an empty vocabulary) and no hits."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.errors import StoreError
from ragmeter.knowledge._io import replace_file, save_array
from ragmeter.knowledge.tokenize import tokenize_many

__all__ = ["LexicalIndex"]


class LexicalIndex:
    """BM25 over chunk texts keyed by chunk id; ``search`` takes all queries in one call."""

    def __init__(self, retriever: Any, ids: np.ndarray) -> None:
        self.retriever = retriever
        self.ids = np.ascontiguousarray(ids, dtype=np.int64)

    @classmethod
    def build(cls, texts: Sequence[str], ids: np.ndarray) -> LexicalIndex:
        if len(texts) != len(ids):
            raise ValueError(f"{len(texts)} texts for {len(ids)} ids")
        tokens = tokenize_many(texts)
        if not any(tokens):  # no chunk holds a word that is not a stop word: nothing to score
            return cls(None, np.asarray(ids))
        import bm25s  # imported on first use: it pulls in scipy (and numba when installed)

        retriever = bm25s.BM25(backend="numpy")
        retriever.index(tokens, show_progress=False)
        return cls(retriever, np.asarray(ids))

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """For each query, up to ``k`` (chunk id, BM25 score) pairs, best first."""
        results: list[list[tuple[int, float]]] = [[] for _ in queries]
        if self.retriever is None or k < 1 or not queries:
            return results
        vocab: dict[str, int] = self.retriever.vocab_dict
        wanted: list[int] = []
        token_ids: list[list[int]] = []
        for i, tokens in enumerate(tokenize_many(queries)):
            known = [vocab[t] for t in tokens if t in vocab]
            if known:
                wanted.append(i)
                token_ids.append(known)
        if not wanted:
            return results
        positions, scores = self.retriever.retrieve(
            token_ids, k=min(k, len(self)), show_progress=False, n_threads=0
        )
        for row, i in enumerate(wanted):
            results[i] = [
                (int(self.ids[p]), float(s))
                for p, s in zip(positions[row], scores[row], strict=True)
                if s > 0
            ]
        return results

    def save(self, folder: Path) -> None:
        """Write the BM25 matrices and ``lexical_ids.npy`` into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        try:
            if self.retriever is not None:
                self.retriever.save(str(folder / "bm25"), show_progress=False)
            else:  # an index of an earlier revision must not be loaded with these ids
                shutil.rmtree(folder / "bm25", ignore_errors=True)
            replace_file(folder / "lexical_ids.npy", lambda p: save_array(p, self.ids))
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot write the BM25 index to {folder}: {exc}") from exc

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        import bm25s

        try:
            with (folder / "lexical_ids.npy").open("rb") as handle:
                ids = np.load(handle)
            saved = len(ids) and (folder / "bm25").is_dir()  # none when no chunk has a word
            retriever = (
                bm25s.BM25.load(str(folder / "bm25"), show_progress=False) if saved else None
            )
        except (OSError, ValueError, json.JSONDecodeError) as exc:
            raise StoreError(f"cannot read the BM25 index in {folder}: {exc}") from exc
        return cls(retriever, ids)
