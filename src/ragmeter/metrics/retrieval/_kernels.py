"""Ranking metrics over a whole judgement matrix at once (numpy), binary relevance.

Each function returns one float per row, NaN where the row has no relevant item (the metric is
undefined there; callers turn NaN into a null score with a reason). ``k=None`` means the whole
retrieved list. Definitions follow trec_eval:

- hit_rate@k  = 1 if a relevant item is in the top k, else 0           (trec ``success_k``)
- mrr@k       = 1 / rank of the first relevant item in the top k      (trec ``recip_rank``)
- precision@k = relevant in top k / k (k = number retrieved if None)  (trec ``P_k``)
- recall@k    = relevant in top k / R                                  (trec ``recall_k``)
- ndcg@k      = DCG@k / IDCG@k, gain 1 / log2(rank + 1), IDCG over min(R, k) items (``ndcg_cut_k``)
- map@k       = sum over relevant ranks j <= k of precision@j / R      (trec ``map_cut_k``)

where R is the number of relevant items of the row.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragmeter.metrics.retrieval._judge import Judgements

__all__ = [
    "KERNELS",
    "average_precision",
    "hit_rate",
    "ndcg",
    "precision",
    "recall",
    "reciprocal_rank",
]


def _cut(j: Judgements, k: int | None) -> np.ndarray:
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return j.relevant if k is None else j.relevant[:, :k]


def _hits(j: Judgements, k: int | None) -> np.ndarray:
    hits: np.ndarray = _cut(j, k).sum(axis=1, dtype=np.int64)
    return hits


def _undefined_where_no_relevant(values: np.ndarray, j: Judgements) -> np.ndarray:
    out = values.astype(np.float64, copy=False)
    out[j.n_relevant == 0] = np.nan
    return out


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def hit_rate(j: Judgements, k: int | None = None) -> np.ndarray:
    return _undefined_where_no_relevant((_hits(j, k) > 0).astype(np.float64), j)


def reciprocal_rank(j: Judgements, k: int | None = None) -> np.ndarray:
    cut = _cut(j, k)
    if cut.shape[1] == 0:
        return _undefined_where_no_relevant(np.zeros(j.rows), j)
    first = cut.argmax(axis=1)
    found = cut[np.arange(j.rows), first]
    rr = np.where(found, 1.0 / (first + 1.0), 0.0)
    return _undefined_where_no_relevant(rr, j)


def precision(j: Judgements, k: int | None = None) -> np.ndarray:
    hits = _hits(j, k)
    den = j.n_retrieved if k is None else np.full(j.rows, k, dtype=np.int64)
    return _undefined_where_no_relevant(_safe_divide(hits, den), j)


def recall(j: Judgements, k: int | None = None) -> np.ndarray:
    return _undefined_where_no_relevant(_safe_divide(_hits(j, k), j.n_relevant), j)


def _discounts(width: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))


def ndcg(j: Judgements, k: int | None = None) -> np.ndarray:
    cut = _cut(j, k)
    width = cut.shape[1]
    dcg = cut @ _discounts(width) if width else np.zeros(j.rows)
    ideal_count = j.n_relevant if k is None else np.minimum(j.n_relevant, k)
    longest = int(ideal_count.max()) if j.rows else 0
    ideal_prefix = np.concatenate(([0.0], np.cumsum(_discounts(longest))))
    idcg = ideal_prefix[ideal_count]
    return _undefined_where_no_relevant(_safe_divide(dcg, idcg), j)


def average_precision(j: Judgements, k: int | None = None) -> np.ndarray:
    cut = _cut(j, k)
    rows, ranks = np.nonzero(cut)  # row-major: each row's hits in rank order
    if len(rows) == 0:
        return _undefined_where_no_relevant(np.zeros(j.rows), j)
    first_of_row = np.searchsorted(rows, rows, side="left")
    hits_so_far = np.arange(1, len(rows) + 1) - first_of_row
    precision_at_hits = hits_so_far / (ranks + 1.0)
    total = np.bincount(rows, weights=precision_at_hits, minlength=j.rows)
    return _undefined_where_no_relevant(_safe_divide(total, j.n_relevant), j)


#: kernel name -> function(judgements, k)
KERNELS: dict[str, Callable[[Judgements, int | None], np.ndarray]] = {
    "hit_rate": hit_rate,
    "mrr": reciprocal_rank,
    "precision": precision,
    "recall": recall,
    "ndcg": ndcg,
    "map": average_precision,
}
