"""The gain measures that walk a ranking and its ideal side by side (trec_eval's G, ndcg_rel
and Rndcg), one row at a time in Python: their running sums depend on where the ideal's gain
changes level, which does not vectorise cleanly, and they are rarely asked for.

Each follows trec_eval's definition step for step (m_G.c, m_ndcg_rel.c, m_Rndcg.c): the gain
table holds grades 0 to the row's highest judged grade and the grades given a gain, sorted by
gain; the ideal ranking takes every judged item from the highest gain down while gains are
positive.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ragmeter.metrics.retrieval._judge import Judgements
from ragmeter.metrics.retrieval._kernels import Cut, Kernel, Options, gain_of, rank_cut

__all__ = ["KERNELS", "ndcg_rel", "normalized_gain", "r_ndcg"]


@dataclass
class _Ideal:
    """trec_eval's walk down the gain table: each call of ``step`` is the next ideal rank."""

    table: list[tuple[float, int]]  # (gain, judged items at that level), gain ascending
    level: int = field(init=False)
    at_level: int = 0
    gain: float = field(init=False)

    def __post_init__(self) -> None:
        self.level = len(self.table) - 1
        self.gain = self.table[self.level][0] if self.level >= 0 else 0.0

    def step(self) -> float:
        self.at_level += 1
        while self.level >= 0 and self.at_level > self.table[self.level][1]:
            self.at_level = 1
            self.level -= 1
            self.gain = self.table[self.level][0] if self.level >= 0 else 0.0
        return self.gain


def _table(judged: np.ndarray, o: Options) -> list[tuple[float, int]]:
    counts = Counter(int(g) for g in judged if g >= 0)
    custom = dict(o.gains)
    top = max(counts) if counts else -1
    levels = sorted(set(range(top + 1)) | set(custom))
    defaults = gain_of(np.array(levels, dtype=np.int64), o) if levels else np.zeros(0)
    table = [
        (float(custom.get(level, defaults[i])), counts.get(level, 0))
        for i, level in enumerate(levels)
    ]
    return sorted(table, key=lambda item: item[0])


RowMeasure = Callable[[list[float], list[tuple[float, int]]], float]


def _per_row(j: Judgements, k: Cut, o: Options, measure: RowMeasure) -> np.ndarray:
    c = j.cut(rank_cut(k))
    gains = gain_of(c.grades, o)
    starts = np.searchsorted(j.judged_rows, np.arange(j.rows + 1))
    out = np.zeros(j.rows, dtype=np.float64)
    for row in range(j.rows):
        ranking = gains[row, : c.n_retrieved[row]].tolist()
        table = _table(j.judged_grades[starts[row] : starts[row + 1]], o)
        out[row] = measure(ranking, table)
    return out


def _g(ranking: list[float], table: list[tuple[float, int]]) -> float:
    ideal = _Ideal(table)
    results_g = sum_results = sum_ideal = sum_cost = 0.0
    for gain in ranking:
        ideal_gain = ideal.step() if ideal.gain > 0.0 else 0.0
        sum_results += gain
        sum_ideal += max(ideal_gain, 0.0)
        sum_cost += ideal_gain if ideal_gain >= 1.0 else 1.0
        if gain != 0:
            results_g += gain / math.log2(2.0 + sum_cost - sum_results)
    while ideal.gain > 0.0:
        sum_ideal += max(ideal.step(), 0.0)
    return results_g / sum_ideal if sum_ideal > 0.0 else 0.0


def _ndcg_rel(ranking: list[float], table: list[tuple[float, int]]) -> float:
    ideal = _Ideal(table)
    results_dcg = ideal_dcg = total = 0.0
    num_rel = num_rel_ret = 0
    for i, gain in enumerate(ranking):
        if gain != 0:
            results_dcg += gain / math.log2(i + 2)
        if ideal.gain > 0.0 and ideal.step() > 0.0:
            num_rel += 1
            ideal_dcg += ideal.gain / math.log2(i + 2)
        if gain > 0:
            total += results_dcg / ideal_dcg
            num_rel_ret += 1
    i = len(ranking)
    while ideal.gain > 0.0:
        if ideal.step() > 0.0:
            num_rel += 1
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    if num_rel > num_rel_ret:
        total += (num_rel - num_rel_ret) * results_dcg / ideal_dcg
    return total / num_rel if total > 0.0 else 0.0


def _r_ndcg(ranking: list[float], table: list[tuple[float, int]]) -> float:
    ideal = _Ideal(table)
    results_dcg = ideal_dcg = total = 0.0
    points = 0
    old_gain = ideal.gain

    def step() -> None:
        """The ideal's next rank; where its gain changes level, nDCG so far is a point."""
        nonlocal ideal_dcg, total, points, old_gain
        ideal.step()
        if old_gain != ideal.gain:
            if ideal_dcg > 0.0:
                total += results_dcg / ideal_dcg
                points += 1
            old_gain = ideal.gain

    i = 0
    while i < len(ranking) and ideal.gain > 0.0:
        step()
        if ranking[i] != 0:
            results_dcg += ranking[i] / math.log2(i + 2)
        if ideal.gain > 0.0:
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    if i < len(ranking):
        for rank in range(i, len(ranking)):
            if ranking[rank] != 0:
                results_dcg += ranking[rank] / math.log2(rank + 2)
        if ideal_dcg > 0.0:
            total += results_dcg / ideal_dcg
            points += 1
        i = len(ranking)
    while ideal.gain > 0.0:
        step()
        if ideal.gain > 0.0:
            ideal_dcg += ideal.gain / math.log2(i + 2)
        i += 1
    return total / points if points else 0.0


def _by_gain(measure: RowMeasure, doc: str) -> Kernel:
    """A kernel of a per-row walk, null where the row has no item with a positive gain."""

    def kernel(j: Judgements, k: Cut, o: Options) -> np.ndarray:
        values = _per_row(j, k, o, measure)
        return np.where(_no_positive_gain(j, o), np.nan, values)

    kernel.__doc__ = doc
    return kernel


normalized_gain = _by_gain(
    _g, "trec_eval's G: gain discounted by the cost so far over the ideal's total gain."
)
ndcg_rel = _by_gain(
    _ndcg_rel,
    "trec_eval's ndcg_rel: nDCG averaged over the ranks of the relevant items (those not "
    "retrieved count at the full list's nDCG).",
)


def r_ndcg(j: Judgements, k: Cut, o: Options) -> np.ndarray:
    """trec_eval's Rndcg: nDCG averaged over the ranks where the ideal's gain changes level."""
    values = _per_row(j, k, o, _r_ndcg)
    return np.where(j.n_relevant(o.level) == 0, np.nan, values)


def _no_positive_gain(j: Judgements, o: Options) -> np.ndarray:
    positive = gain_of(j.judged_grades, o) > 0
    counts = np.bincount(j.judged_rows[positive], minlength=j.rows)
    mask: np.ndarray = counts == 0
    return mask


#: kernel name -> function(judgements, k, options)
KERNELS = {"normalized_gain": normalized_gain, "ndcg_rel": ndcg_rel, "r_ndcg": r_ndcg}
