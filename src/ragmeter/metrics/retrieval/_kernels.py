"""Rank-based measures over a whole judgement matrix at once (numpy), as trec_eval defines them.

Each kernel takes the judgements, the spec's ``@k`` (``None``: the whole list) and the measure's
options, and returns one float per row, NaN where the measure is undefined (the row has no
relevant item: trec_eval scores 0 there; callers turn NaN into a null with a reason, or into 0
under trec_eval's convention). ``L`` is the relevance level: an item is relevant when its grade
is at least L (trec_eval's ``-l``, default 1); R is the number of relevant items of the row,
``rel_j`` 1 when the item at rank j is relevant; n the number retrieved.

- ``precision@k``   = sum_{j<=k} rel_j / k; without k: / n                       (``P_k``)
- ``recall@k``      = sum_{j<=k} rel_j / R                                       (``recall_k``)
- ``hit_rate@k``    = 1 if a relevant item is in the top k                        (``success_k``)
- ``mrr@k``         = 1 / rank of the first relevant item in the top k            (``recip_rank``)
- ``map@k``         = sum over relevant ranks j <= k of precision@j / R          (``map_cut_k``)
- ``ndcg@k``        = DCG@k / ideal DCG@k, DCG = sum gain(grade_j) / log2(j + 1), gain = the
  grade (or a given map, or 2**grade - 1 with ``dcg=exp-log2``); the ideal ranks every judged
  item by gain                                                                   (``ndcg_cut_k``)
- ``r_precision``   = relevant in the top R / R                                  (``Rprec``)
- ``bpref``, ``infap``, interpolated precision and the set measures follow trec_eval's code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ragmeter.metrics.retrieval._judge import NOT_JUDGED, Judgements

__all__ = [
    "ELEVEN_POINTS",
    "KERNELS",
    "Cut",
    "Kernel",
    "Options",
    "discounts",
    "gain_matrix",
    "ideal_dcg",
    "rank_cut",
]

#: trec_eval's recall levels of iprec_at_recall and 11pt_avg
ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: trec_eval's MIN_GEO_MEAN and INFAP_EPSILON
INFAP_EPSILON = 0.00001

Cut = int | float | None


@dataclass(frozen=True, slots=True)
class Options:
    """What a measure is computed with besides the judgements and the cut-off."""

    #: the grade from which an item counts as relevant (trec_eval's -l)
    level: int = 1
    #: grade -> gain where it differs from the grade itself (trec_eval's ``ndcg.1=3,2=9``)
    gains: tuple[tuple[int, float], ...] = ()
    #: gain 2**grade - 1 instead of the grade (ir_measures' ``dcg='exp-log2'``)
    exp_gain: bool = False
    #: set_F's relative weight of recall (trec_eval's set_F.x: (x+1)PR / (xP + R))
    beta: float = 1.0
    #: rank-biased precision's persistence
    p: float = 0.9
    #: the recall levels 11pt_avg averages
    levels: tuple[float, ...] = ELEVEN_POINTS
    #: utility's coefficients of relevant retrieved, non-relevant retrieved, relevant missed,
    #: non-relevant missed (trec_eval's utility.a,b,c,d) and the collection's size (its -N)
    utility: tuple[float, float, float, float] = (1.0, -1.0, 0.0, 0.0)
    collection_size: int = 0


Kernel = Callable[[Judgements, Cut, Options], np.ndarray]


def _nan_where(values: np.ndarray, undefined: np.ndarray) -> np.ndarray:
    out = values.astype(np.float64, copy=False)
    out[undefined] = np.nan
    return out


def _no_relevant(j: Judgements, o: Options) -> np.ndarray:
    mask: np.ndarray = j.n_relevant(o.level) == 0
    return mask


def _divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0."""
    out = np.zeros(np.shape(num), dtype=np.float64)
    np.divide(num, den, out=out, where=np.asarray(den) > 0)
    return out


def rank_cut(k: Cut) -> int | None:
    """``k`` as a rank cut-off (a whole number from 1, or None for the whole list)."""
    if k is not None and (not isinstance(k, int) or k < 1):
        raise ValueError(f"the cut-off must be a whole number >= 1, got {k}")
    return k


def _hits(j: Judgements, o: Options) -> np.ndarray:
    hits: np.ndarray = j.relevant(o.level).sum(axis=1, dtype=np.int64)
    return hits


def discounts(width: int) -> np.ndarray:
    """1 / log2(rank + 1) for ranks 1..width."""
    return 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))


# -- counts and set measures ---------------------------------------------------------------


def num_ret(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    return j.cut(rank_cut(k)).n_retrieved.astype(np.float64)


def num_rel(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    return j.n_relevant(o.level).astype(np.float64)


def num_rel_ret(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    return _hits(j.cut(rank_cut(k)), o).astype(np.float64)


def num_nonrel_judged_ret(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    grades = j.cut(rank_cut(k)).grades
    counts: np.ndarray = ((grades >= 0) & (grades < o.level)).sum(axis=1)
    return counts.astype(np.float64)


def num_q(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    return np.ones(j.rows, dtype=np.float64)


def set_precision(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    c = j.cut(rank_cut(k))
    return _nan_where(_divide(_hits(c, o), c.n_retrieved), _no_relevant(j, o))


def set_relative_precision(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    c = j.cut(rank_cut(k))
    den = np.minimum(c.n_retrieved, j.n_relevant(o.level))
    return _nan_where(_divide(_hits(c, o), den), _no_relevant(j, o))


def set_map(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    c = j.cut(rank_cut(k))
    hits = _hits(c, o).astype(np.float64)
    den = c.n_retrieved * j.n_relevant(o.level)
    return _nan_where(_divide(hits * hits, den), _no_relevant(j, o))


def set_f(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    c = j.cut(rank_cut(k))
    hits = _hits(c, o)
    p = _divide(hits, c.n_retrieved)
    r = _divide(hits, j.n_relevant(o.level))
    f = _divide((o.beta + 1.0) * p * r, o.beta * p + r)
    return _nan_where(f, _no_relevant(j, o))


def utility(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    c = j.cut(rank_cut(k))
    a, b, cc, d = o.utility
    hits = _hits(c, o).astype(np.float64)
    n = c.n_retrieved.astype(np.float64)
    rel = j.n_relevant(o.level).astype(np.float64)
    value: np.ndarray = (
        a * hits + b * (n - hits) + cc * (rel - hits) + d * (o.collection_size + hits - n - rel)
    )
    return value


def unjudged(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """Share of the top k not judged (trec_eval's unj_k; without k: of those retrieved)."""
    k = rank_cut(k)
    c = j.cut(k)
    inside = np.arange(c.width) < c.n_retrieved[:, None]
    count = ((c.grades < 0) & inside).sum(axis=1)
    den = c.n_retrieved if k is None else np.full(j.rows, k, dtype=np.int64)
    return _divide(count, den)


# -- rank measures ---------------------------------------------------------------------------


def precision(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    k = rank_cut(k)
    c = j.cut(k)
    den = c.n_retrieved if k is None else np.full(j.rows, k, dtype=np.int64)
    return _nan_where(_divide(_hits(c, o), den), _no_relevant(j, o))


def relative_precision(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    k = rank_cut(k)
    if k is None:
        return set_relative_precision(j, k, o)
    den = np.minimum(k, j.n_relevant(o.level))
    return _nan_where(_divide(_hits(j.cut(k), o), den), _no_relevant(j, o))


def recall(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    hits = _hits(j.cut(rank_cut(k)), o)
    return _nan_where(_divide(hits, j.n_relevant(o.level)), _no_relevant(j, o))


def hit_rate(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    hits = _hits(j.cut(rank_cut(k)), o)
    return _nan_where((hits > 0).astype(np.float64), _no_relevant(j, o))


def reciprocal_rank(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    relevant = j.cut(rank_cut(k)).relevant(o.level)
    if relevant.shape[1] == 0:
        return _nan_where(np.zeros(j.rows), _no_relevant(j, o))
    first = relevant.argmax(axis=1)
    found = relevant[np.arange(j.rows), first]
    return _nan_where(np.where(found, 1.0 / (first + 1.0), 0.0), _no_relevant(j, o))


def average_precision(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    relevant = j.cut(rank_cut(k)).relevant(o.level)
    rows, ranks = np.nonzero(relevant)  # row-major: each row's hits in rank order
    hits_so_far = np.arange(1, len(rows) + 1) - np.searchsorted(rows, rows, side="left")
    total = np.bincount(rows, weights=hits_so_far / (ranks + 1.0), minlength=j.rows)
    return _nan_where(_divide(total, j.n_relevant(o.level)), _no_relevant(j, o))


def r_precision(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    c = j.cut(rank_cut(k))
    rel = j.n_relevant(o.level)
    look = np.minimum(c.n_retrieved, rel)
    inside = np.arange(c.width) < look[:, None]
    hits = (c.relevant(o.level) & inside).sum(axis=1)
    return _nan_where(_divide(hits, rel), _no_relevant(j, o))


def r_precision_mult(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """Precision at rank floor(m R + 0.9) (trec_eval's Rprec_mult_m), m = the ``@`` value;
    past the end of the list, relevant retrieved / that rank."""
    if k is None or isinstance(k, bool) or k <= 0:
        raise ValueError(f"the multiple of R must be a number > 0, got {k}")
    rel = j.n_relevant(o.level)
    cutoff = np.floor(float(k) * rel + 0.9).astype(np.int64)
    inside = np.arange(j.width) < np.minimum(cutoff, j.n_retrieved)[:, None]
    hits = (j.relevant(o.level) & inside).sum(axis=1)
    return _nan_where(_divide(hits, cutoff), _no_relevant(j, o))


def bin_g(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """Binary G: mean over relevant items of 1 / log2(2 + non-relevant items before it)."""
    relevant = j.cut(rank_cut(k)).relevant(o.level)
    rows, ranks = np.nonzero(relevant)
    hits_so_far = np.arange(1, len(rows) + 1) - np.searchsorted(rows, rows, side="left")
    terms = 1.0 / np.log2(3.0 + ranks - hits_so_far)
    total = np.bincount(rows, weights=terms, minlength=j.rows)
    return _nan_where(_divide(total, j.n_relevant(o.level)), _no_relevant(j, o))


def f1(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """Harmonic mean of precision@k and recall@k (ranx's f1)."""
    p = precision(j, k, o)
    r = recall(j, k, o)
    out = np.zeros(j.rows)
    np.divide(2 * p * r, p + r, out=out, where=(p + r) > 0)
    return np.where(np.isnan(p), np.nan, out)


# -- judged-only measures ----------------------------------------------------------------------


def _judged_counts(c: Judgements, o: Options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per position: relevant here, non-relevant items before, in-pool unjudged before."""
    grades = c.grades
    relevant = grades >= o.level
    nonrel = (grades >= 0) & (grades < o.level)
    pooled = (grades < 0) & (grades != NOT_JUDGED)
    before_nonrel: np.ndarray = np.cumsum(nonrel, axis=1) - nonrel
    before_pooled: np.ndarray = np.cumsum(pooled, axis=1) - pooled
    return relevant, before_nonrel, before_pooled


def bpref(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    c = j.cut(rank_cut(k))
    relevant, before_nonrel, _ = _judged_counts(c, o)
    rel = j.n_relevant(o.level)
    bound = np.minimum(j.n_nonrelevant(o.level), rel)[:, None]
    seen = np.minimum(before_nonrel, rel[:, None])
    penalty = _divide(seen, np.broadcast_to(bound, seen.shape))
    terms = np.where(relevant, 1.0 - np.where(before_nonrel > 0, penalty, 0.0), 0.0)
    return _nan_where(_divide(terms.sum(axis=1), rel), _no_relevant(j, o))


def infap(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """Inferred AP (Yilmaz and Aslam), as trec_eval's infAP: items in the pool but not
    assessed (negative grades) are inferred from the judged ones; unjudged ones are skipped."""
    c = j.cut(rank_cut(k))
    relevant, nonrel, pooled = _judged_counts(c, o)
    rel_so_far = np.cumsum(relevant, axis=1).astype(np.float64)  # including this position
    rank = np.arange(c.width, dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        later = 1.0 / (rank + 1.0) + (rank / (rank + 1.0)) * (
            (rel_so_far - 1 + nonrel + pooled) / rank
        ) * ((rel_so_far - 1 + INFAP_EPSILON) / (rel_so_far - 1 + nonrel + 2 * INFAP_EPSILON))
    terms = np.where(relevant, np.where(rank == 0, 1.0, later), 0.0)
    return _nan_where(_divide(terms.sum(axis=1), j.n_relevant(o.level)), _no_relevant(j, o))


# -- interpolated precision ----------------------------------------------------------------------


def _interpolated_at(j: Judgements, o: Options, levels: tuple[float, ...]) -> np.ndarray:
    """(rows, len(levels)): interpolated precision at each recall level, as trec_eval's
    iprec_at_recall (the level as a count of relevant items: round(level x R))."""
    relevant = j.relevant(o.level)
    rel = j.n_relevant(o.level)
    cum = np.cumsum(relevant, axis=1)
    ranks = np.arange(1, j.width + 1, dtype=np.float64)
    inside = np.arange(j.width) < j.n_retrieved[:, None]
    precision_at = np.where(inside, cum / ranks, 0.0)
    best_after = np.maximum.accumulate(precision_at[:, ::-1], axis=1)[:, ::-1]
    hits = cum[:, -1] if j.width else np.zeros(j.rows, dtype=np.int64)
    # the rank of each row's h-th relevant item, for h = 1..hits
    rows, positions = np.nonzero(relevant)
    nth = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left")
    out = np.zeros((j.rows, len(levels)), dtype=np.float64)
    for column, level in enumerate(levels):
        wanted = _lround(level * rel)  # a count of relevant items
        need = np.maximum(wanted, 1)  # 0 reads as the first relevant item
        picked = nth == (need[rows] - 1)
        value = np.zeros(j.rows, dtype=np.float64)
        value[rows[picked]] = best_after[rows[picked], positions[picked]]
        out[:, column] = np.where(wanted <= hits, value, 0.0)
    return out


def _lround(values: np.ndarray) -> np.ndarray:
    """C's lround of non-negative values: halves away from zero, exactly."""
    floor = np.floor(values)
    rounded: np.ndarray = np.where(values - floor >= 0.5, floor + 1, floor)
    return rounded.astype(np.int64)


def iprec(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """Interpolated precision at recall level ``k`` (trec_eval's iprec_at_recall_k)."""
    if k is None or isinstance(k, bool) or not 0.0 <= k <= 1.0:
        raise ValueError(f"the recall level must be a number from 0 to 1, got {k}")
    return _nan_where(_interpolated_at(j, o, (float(k),))[:, 0], _no_relevant(j, o))


def iprec_avg(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """Interpolated precision averaged over recall levels (trec_eval's 11pt_avg)."""
    values = _interpolated_at(j.cut(rank_cut(k)), o, o.levels).mean(axis=1)
    return _nan_where(values, _no_relevant(j, o))


# -- gain measures -------------------------------------------------------------------------------


def gain_of(grades: np.ndarray, o: Options) -> np.ndarray:
    """The gain of each grade: the grade itself (0 below 1), a given map's, or 2**g - 1;
    0 for items not judged or judged with a negative grade."""
    values = grades.astype(np.float64)
    if o.exp_gain:
        gains = np.where(grades > 0, np.exp2(np.where(grades > 0, values, 0.0)) - 1.0, 0.0)
    else:
        gains = np.where(grades > 0, values, 0.0)
    for grade, gain in o.gains:
        gains = np.where(grades == grade, gain, gains)
    out: np.ndarray = np.where(grades < 0, 0.0, gains)
    return out


def gain_matrix(j: Judgements, o: Options) -> np.ndarray:
    return gain_of(j.grades, o)


def ideal_dcg(j: Judgements, k: int | None, o: Options) -> np.ndarray:
    """DCG of the best ranking of every row's judged items (positive gains only), cut at k."""
    gains = gain_of(j.judged_grades, o)
    keep = gains > 0
    rows, gains = j.judged_rows[keep], gains[keep]
    order = np.lexsort((-gains, rows))
    rows, gains = rows[order], gains[order]
    position = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left")
    if k is not None:
        inside = position < k
        rows, gains, position = rows[inside], gains[inside], position[inside]
    weights = gains / np.log2(position + 2.0)
    total: np.ndarray = np.bincount(rows, weights=weights, minlength=j.rows)
    return total


def dcg(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    c = j.cut(rank_cut(k))
    if c.width == 0:
        return np.zeros(j.rows)
    value: np.ndarray = gain_matrix(c, o) @ discounts(c.width)
    return value


def ndcg(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    k = rank_cut(k)
    ideal = ideal_dcg(j, k, o)
    return _nan_where(_divide(dcg(j, k, o), ideal), ideal <= 0)


def rbp(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """Rank-biased precision (Moffat and Zobel): (1 - p) sum gain_j p**(j-1), gains scaled
    into [0, 1] over the row's grades when they leave it (as trec_eval's rbp)."""
    c = j.cut(rank_cut(k))
    gains = gain_matrix(c, o)
    low, high = _gain_range(j, o)
    scale = (low < 0) | (high > 1)
    span = np.where(high > low, high - low, 1.0)
    scaled = np.where(scale[:, None], (gains - low[:, None]) / span[:, None], gains)
    # an item not judged, or in the pool but not assessed, has gain 0 before scaling and after
    scaled = np.where(c.grades < 0, 0.0, scaled)
    weights = o.p ** np.arange(c.width, dtype=np.float64)
    value: np.ndarray = (1.0 - o.p) * (scaled @ weights)
    return value


def _gain_range(j: Judgements, o: Options) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the least and greatest gain of its gain table: grades 0 to its highest judged
    grade and the grades given a gain (trec_eval's setup_gains); (0, 0) for an empty table."""
    top = np.full(j.rows, -1, dtype=np.int64)
    judged = j.judged_grades >= 0
    np.maximum.at(top, j.judged_rows[judged], j.judged_grades[judged])
    low = np.full(j.rows, np.inf)
    high = np.full(j.rows, -np.inf)
    for grade in range(int(top.max()) + 1 if j.rows else 0):
        gain = float(gain_of(np.array([grade]), o)[0])
        present = top >= grade
        low = np.where(present, np.minimum(low, gain), low)
        high = np.where(present, np.maximum(high, gain), high)
    for _, gain in o.gains:
        low, high = np.minimum(low, gain), np.maximum(high, gain)
    empty = low > high
    return np.where(empty, 0.0, low), np.where(empty, 0.0, high)


def rbp_resid(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """The most rank-biased precision could grow if every unjudged item were relevant."""
    c = j.cut(rank_cut(k))
    inside = np.arange(c.width) < c.n_retrieved[:, None]
    unjudged_here = (c.grades < 0) & inside
    weights = o.p ** np.arange(c.width, dtype=np.float64)
    tail = o.p ** c.n_retrieved.astype(np.float64)
    value = tail + (1.0 - o.p) * (unjudged_here @ weights)
    return np.where(unjudged_here.any(axis=1), value, 0.0)


#: kernel name -> function(judgements, k, options)
KERNELS: dict[str, Kernel] = {
    "num_ret": num_ret,
    "num_rel": num_rel,
    "num_rel_ret": num_rel_ret,
    "num_nonrel_judged_ret": num_nonrel_judged_ret,
    "num_q": num_q,
    "f1": f1,
    "set_precision": set_precision,
    "set_relative_precision": set_relative_precision,
    "set_map": set_map,
    "set_f": set_f,
    "utility": utility,
    "unjudged": unjudged,
    "precision": precision,
    "relative_precision": relative_precision,
    "recall": recall,
    "hit_rate": hit_rate,
    "mrr": reciprocal_rank,
    "map": average_precision,
    "r_precision": r_precision,
    "r_precision_mult": r_precision_mult,
    "bin_g": bin_g,
    "bpref": bpref,
    "infap": infap,
    "iprec": iprec,
    "iprec_avg": iprec_avg,
    "dcg": dcg,
    "ndcg": ndcg,
    "rbp": rbp,
    "rbp_resid": rbp_resid,
}
