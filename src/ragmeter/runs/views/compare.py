"""Two runs side by side: per metric, each run's mean and the paired difference over the rows
both scored, with a 95% family-wise CI and a sign-flip test's p-value, both
Bonferroni-corrected across the metrics (``reports.stats`` says why), and a verdict (better,
worse, no evidence of a difference, or equivalent within a margin asked for), so "did this
change help?" has an answer beyond noise. One code for the service, the dashboard, the
report and ``ragmeter runs compare``; the gate asks for each metric's own 95% interval.
Rows pair by query text, or by ``id`` when every row of both runs has one; the n-th
occurrence of a key pairs with the n-th in the other run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Literal

import numpy as np

from ragmeter.errors import ConfigError
from ragmeter.metrics.scales import scale_label
from ragmeter.reports.stats import (
    SMALL_SAMPLE,
    Correction,
    Note,
    PairedComparison,
    compare_paired,
)
from ragmeter.store.pairing import is_row_id
from ragmeter.wire.compare import ComparisonNote, MetricComparison

__all__ = [
    "TIE",
    "VERDICT_TEXT",
    "MetricComparison",
    "Pairing",
    "Scored",
    "Side",
    "check_options",
    "compare_scores",
    "compare_sides",
    "correction_text",
    "pair_positions",
    "verdict_text",
]

#: (query, metric_name, score) or (query, metric_name, score, row_id) of one run, in row
#: order; ``row_id`` is the dataset row's ``id`` where it has one
Scored = Iterable[tuple[str, str, float | None] | tuple[str, str, float | None, str | int | None]]
Pairing = Literal["query", "id"]
_BY: dict[Pairing, str] = {"query": "query text", "id": "row id"}
#: a paired difference this close to zero counts as "same", not better or worse
TIE = 1e-12
#: each verdict as a reader sees it (``{margin}``: the equivalence margin)
VERDICT_TEXT = {
    "better": "better",
    "worse": "worse",
    "no_evidence": "no evidence of a difference",
    "equivalent": "equivalent (±{margin})",
}


@dataclass(frozen=True)
class Side:
    """One run's results of one metric as columns: the pairing key (any integers: equal keys
    pair) and the score (NaN where null), in row order within each key."""

    keys: np.ndarray
    scores: np.ndarray


def _index() -> defaultdict[Hashable, int]:
    """Numbers for values in order of first sight: a missing value gets the next number."""
    index: defaultdict[Hashable, int] = defaultdict()
    index.default_factory = index.__len__
    return index


def _codes(values: list[Hashable], index: defaultdict[Hashable, int]) -> np.ndarray:
    """Each value's number in ``index`` (shared by both runs, so equal keys get equal
    numbers); one C-speed pass, as a run may hold 1,000,000 results."""
    return np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))


def _nth(codes: np.ndarray) -> np.ndarray:
    """How many earlier results share the key (codes in 0..len-1): 0 for its first
    occurrence, the usual case, found by counting."""
    if len(codes) == 0 or int(np.bincount(codes).max()) <= 1:
        return np.zeros(len(codes), dtype=np.int64)
    order = np.argsort(codes, kind="stable")  # row order within a key
    k = codes[order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = k[1:] != k[:-1]
    position = np.arange(len(order))
    first = np.maximum.accumulate(np.where(starts, position, 0))
    out = np.empty(len(order), dtype=np.int64)
    out[order] = position - first
    return out


def pair_positions(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``a`` and ``b`` (two runs' keys of one metric, each in row order) of
    the pairs: the n-th occurrence of a key with the n-th in the other run, in ``a``'s row
    order (so differences, and the bootstrap over them, do not depend on the keys' values).
    Runs of the same rows in the same order pair position by position."""
    if a.shape == b.shape and np.array_equal(a, b):
        both = np.arange(len(a))
        return both, both
    _, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
    stride = len(codes) + 1
    unique_a = codes[: len(a)] * stride + _nth(codes[: len(a)])
    unique_b = codes[len(a) :] * stride + _nth(codes[len(a) :])
    _, ia, ib = np.intersect1d(unique_a, unique_b, assume_unique=True, return_indices=True)
    order = np.argsort(ia)
    return ia[order], ib[order]


def _sides(
    rows: Sequence[tuple[Any, ...]],
    by: Pairing,
    key_index: defaultdict[Hashable, int],
    metric_index: defaultdict[Hashable, int],
) -> dict[int, Side]:
    """One run's results per metric code."""
    metrics = _codes(list(map(itemgetter(1), rows)), metric_index)
    keys = _codes(list(map(itemgetter(3 if by == "id" else 0), rows)), key_index)
    scores = np.array(list(map(itemgetter(2), rows)), dtype=np.float64)  # None -> NaN
    return {
        int(code): Side(keys[metrics == code], scores[metrics == code])
        for code in np.unique(metrics)
    }


def _pairing(rows: Sequence[tuple[Any, ...]]) -> Pairing:
    """Pair by ``id`` when every row of both runs has one (a string or an integer, not a
    boolean: ``store.pairing``), else by query text. ``runs.views.pairs`` asks the same in SQL."""
    if rows and all(len(r) > 3 and is_row_id(r[3]) for r in rows):
        return "id"
    return "query"


def _unpaired_note(by: Pairing, scored_a: int, scored_b: int) -> Note:
    """Why a metric has no pair: how many rows each run scored."""
    return Note(
        "unpaired",
        f"no {by} is scored in both runs ({scored_a} rows scored in the base run, "
        f"{scored_b} in the other; rows pair by {_BY[by]})",
        {"by": by, "scored_a": scored_a, "scored_b": scored_b},
    )


def _diffs(a: Side, b: Side) -> tuple[np.ndarray, int, int, float | None, float | None]:
    """Paired differences (other - base) of one metric, each run's scored count and mean."""
    ia, ib = pair_positions(a.keys, b.keys)
    diffs = b.scores[ib] - a.scores[ia]
    diffs = diffs[~np.isnan(diffs)]
    va, vb = a.scores[~np.isnan(a.scores)], b.scores[~np.isnan(b.scores)]
    mean_a = float(va.mean()) if len(va) else None
    mean_b = float(vb.mean()) if len(vb) else None
    return diffs, len(va), len(vb), mean_a, mean_b


def _notes(*notes: Note | None) -> list[ComparisonNote]:
    return [ComparisonNote(code=n.code, values=dict(n.values)) for n in notes if n]


def _comparison(
    name: str,
    diffs: np.ndarray,
    counts: tuple[int, int, float | None, float | None],
    tested: PairedComparison | None,
    family: tuple[Pairing, Correction, int, float | None, float],
) -> MetricComparison:
    scored_a, scored_b, mean_a, mean_b = counts
    by, correction, size, margin, alpha = family
    notes = (
        [_unpaired_note(by, scored_a, scored_b)]
        if tested is None
        else [n for n in (tested.ci.note, tested.verdict_note) if n]
    )
    return MetricComparison(
        metric_name=name,
        base_mean=mean_a,
        other_mean=mean_b,
        paired=len(diffs),
        delta=None if tested is None else tested.delta,
        ci95_low=None if tested is None else tested.ci.low,
        ci95_high=None if tested is None else tested.ci.high,
        better=int((diffs > TIE).sum()),
        worse=int((diffs < -TIE).sum()),
        same=int((np.abs(diffs) <= TIE).sum()),
        note="; ".join(n.text for n in notes) or None,
        notes=_notes(*notes),
        ci_method=None if tested is None else tested.ci.method,
        p_value=None if tested is None else tested.p_value,
        p_method=None if tested is None else tested.p_method,
        p_adjusted=None if tested is None else tested.p_adjusted,
        verdict=None if tested is None else tested.verdict,
        base_unpaired=scored_a - len(diffs),
        other_unpaired=scored_b - len(diffs),
        paired_by=by,
        correction=correction,
        family=size,
        confidence=1.0 - alpha,
        ci_level=None if tested is None else tested.ci_level,
        margin=margin,
        ci_note=None if tested is None else tested.ci_note,
        small_sample=len(diffs) < SMALL_SAMPLE,
        scale=scale_label(name),
    )


def compare_scores(
    base: Scored,
    other: Scored,
    *,
    alpha: float = 0.05,
    correction: Correction = "bonferroni",
    margin: float | None = None,
) -> list[MetricComparison]:
    """Metrics both runs have, in the base run's order, with verdicts at ``alpha`` after
    the ``correction`` across them (``margin``: the equivalence margin, in each metric's
    units). ConfigError when the runs share no metric, or no key scored in both (a
    comparison of nothing is not a result); a metric without pairs has ``delta`` null and a
    ``note`` saying why."""
    rows_a, rows_b = list(base), list(other)
    by = _pairing(rows_a + rows_b)
    key_index, metric_index = _index(), _index()
    a = _sides(rows_a, by, key_index, metric_index)
    b = _sides(rows_b, by, key_index, metric_index)
    names = list(map(str, metric_index))
    sides = {names[code]: (a.get(code), b.get(code)) for code in range(len(names))}
    return compare_sides(sides, by, alpha=alpha, correction=correction, margin=margin)


def check_options(alpha: float, margin: float | None) -> None:
    """ConfigError naming the option unless 0 < alpha < 1 and the margin is positive."""
    if isinstance(alpha, bool) or not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha: {alpha!r}; choose a number between 0 and 1 (e.g. 0.05)")
    if margin is not None and (isinstance(margin, bool) or not 0.0 < margin < float("inf")):
        raise ConfigError(
            f"margin: {margin!r}; choose a positive number in the metrics' own units "
            "(e.g. 0.02: a difference under 0.02 counts as none)"
        )


def compare_sides(
    sides: dict[str, tuple[Side | None, Side | None]],
    by: Pairing,
    *,
    alpha: float = 0.05,
    correction: Correction = "bonferroni",
    margin: float | None = None,
) -> list[MetricComparison]:
    """``compare_scores`` over runs given as columns: per metric name (the base run's
    first, in its order) each run's results, None where a run has no result of it."""
    check_options(alpha, margin)
    shared = {name: (a, b) for name, (a, b) in sides.items() if a is not None and b is not None}
    if not shared:
        names_a = [name for name, (a, _) in sides.items() if a is not None]
        names_b = [name for name, (_, b) in sides.items() if b is not None]
        raise ConfigError(
            f"the runs share no metric (base: {', '.join(names_a) or 'none'}; "
            f"other: {', '.join(names_b) or 'none'})"
        )
    parts = {name: _diffs(a, b) for name, (a, b) in shared.items()}
    if all(len(p[0]) == 0 for p in parts.values()):
        raise ConfigError(
            f"the runs share no scored {by}: no {by} has a score in both runs for any of "
            f"their metrics ({', '.join(parts)}); rows pair by {_BY[by]}"
        )
    tested = compare_paired(
        {name: p[0] for name, p in parts.items()},
        alpha=alpha,
        correction=correction,
        margin=margin,
    )
    size = len(tested) if correction == "bonferroni" else 1
    family = (by, correction, size, margin, alpha)
    return [_comparison(name, p[0], p[1:], tested.get(name), family) for name, p in parts.items()]


def verdict_text(c: MetricComparison) -> str:
    """The verdict in words (``no evidence of a difference``), or "—" with no pair."""
    if c.verdict is None:
        return "—"
    margin = f"{c.margin:g}" if c.margin is not None else ""
    return VERDICT_TEXT[c.verdict].format(margin=margin)


def correction_text(comparison: Sequence[MetricComparison]) -> tuple[str, str]:
    """(the interval's column header, one line saying how intervals and p-values are
    corrected): ``95% family-wise CI`` and "Bonferroni across 5 metrics, each interval at
    99%" for compare; ``95% CI`` and "no correction" for each metric alone."""
    first = next((c for c in comparison if c.ci_level is not None), None)
    if first is None or first.ci_level is None:
        return "CI", "no metric has pairs"
    level = f"{100 * first.confidence:.4g}%"
    if first.correction == "none":
        return f"{level} CI", f"{level} CI and p of each metric alone (no correction)"
    line = (
        f"{level} family-wise CI, Bonferroni-adjusted p, {first.family} "
        f"metric{'s' if first.family != 1 else ''} "
        f"(each interval at {100 * first.ci_level:.4g}%); better/worse only when both show it"
    )
    if first.margin is not None:
        line += f"; equivalent: the interval inside ±{first.margin:g}"
    return f"{level} family-wise CI", line
