"""How far a judge agrees with people, and people with each other: the statistics of
judge-human agreement, each with a bootstrap interval over units, its n and a note.

- binary (pass = 1, fail = 0): Cohen's kappa, accuracy, balanced accuracy (the mean of the
  recall of each human class) and F1 with the *problem* class (fail, 0) as positive: a
  judge is there to find failures. Values that are not all 0/1 need a ``threshold``: both
  sides (on one scale) are then binarised ``value >= threshold`` = pass.
- ordinal (DB-GPT's 0-5 grades): quadratic-weighted kappa (weights ((i-j)/(k-1))^2 on the
  categories' ranks), Spearman's rho and exact agreement (``accuracy``).
- continuous (0-1 scores): Spearman's rho, and the binary statistics of the binarised
  scores when a ``threshold`` is given.
- among reviewers: Krippendorff's alpha (nominal, ordinal or interval) from the
  coincidence matrix, any number of reviewers per unit, missing labels allowed: the ceiling
  a judge can be held to.

The interval of every statistic is the percentile interval of ``resamples`` bootstrap
resamples of the units (rows), seeded: a resample of units is a multinomial draw of counts,
so a statistic of a contingency table resamples the table's cells directly and Spearman's
rho and alpha are computed from per-unit counts, all vectorised. Resamples on which a
statistic is undefined (one class only) are left out of its interval. Rows where either
side is missing (None or NaN) are dropped; ``n`` counts the rows used. A statistic is
``None`` where it is undefined, with a ``Note`` saying why; one over fewer than
``SMALL_SAMPLE`` units carries the ``small_sample`` note (its interval is not
informative)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragmeter.errors import ConfigError
from ragmeter.reports._alpha import categorical_alpha, interval_alpha
from ragmeter.reports.stats import SMALL_SAMPLE, Note, unit_counts

__all__ = [
    "Agreement",
    "Confusion",
    "Kind",
    "Level",
    "Statistic",
    "judge_agreement",
    "majority",
    "note_dict",
    "reviewers_alpha",
]

Kind = Literal["binary", "ordinal", "continuous"]
Level = Literal["nominal", "ordinal", "interval"]

_BINARY = (0.0, 1.0)
#: draws per chunk of Spearman's resamples: a dozen (b, n) arrays live at once (~100 MB)
_RANK_DRAWS = 1_000_000
_BINARY_NAMES = ("cohen_kappa", "balanced_accuracy", "f1", "accuracy")
_UNDEFINED = {
    "agreement_no_units": "undefined: no unit with both values",
    "agreement_one_class": "undefined: one class only on both sides",
    "agreement_one_human_class": "undefined: the humans gave one class only",
    "agreement_no_failures": "undefined: no failing row on either side",
    "agreement_constant": "undefined: constant values on one side",
    "agreement_no_pairable": "undefined: no unit with two or more values",
    "agreement_one_value": "undefined: every value is the same",
}


@dataclass(frozen=True)
class Statistic:
    """One agreement statistic over ``n`` units with its bootstrap interval; ``value`` is
    None where the statistic is undefined, and ``note`` then says why (else it flags a
    small sample)."""

    name: str
    value: float | None
    low: float | None
    high: float | None
    n: int
    note: Note | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "note": note_dict(self.note),
        }


@dataclass(frozen=True)
class Confusion:
    """Counts of units by (judge category, human category): judge rows x human columns."""

    categories: tuple[float, ...]
    counts: tuple[tuple[int, ...], ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "categories": list(self.categories),
            "counts": [list(row) for row in self.counts],
            "rows": "judge",
            "columns": "human",
        }


@dataclass(frozen=True)
class Agreement:
    """A judge's agreement with one reviewer (``against`` names them) or with the
    reviewers' majority (``against`` = "majority") over ``n`` units."""

    kind: Kind
    against: str
    n: int
    statistics: tuple[Statistic, ...]
    confusion: Confusion | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "against": self.against,
            "n": self.n,
            "statistics": [s.as_dict() for s in self.statistics],
            "confusion": None if self.confusion is None else self.confusion.as_dict(),
        }

    def statistic(self, name: str) -> Statistic | None:
        """The statistic called ``name``, or None when this kind has none of that name."""
        return next((s for s in self.statistics if s.name == name), None)


def note_dict(note: Note | None) -> dict[str, Any] | None:
    """A note as JSON: its code (for the reader's language), English text and values."""
    if note is None:
        return None
    return {"code": note.code, "text": note.text, "values": dict(note.values)}


def _undefined(code: str) -> Note:
    return Note(code, _UNDEFINED[code])


def _small(n: int) -> Note | None:
    if n >= SMALL_SAMPLE:
        return None
    return Note(
        "small_sample",
        f"n < {SMALL_SAMPLE}: interval not informative ({n} units)",
        {"n": n, "min": SMALL_SAMPLE},
    )


def _statistic(
    name: str, observed: float, replicates: np.ndarray, n: int, confidence: float, why: str
) -> Statistic:
    """A statistic from its observed value (NaN: undefined, ``why`` the note's code) and
    its bootstrap replicates (NaN where undefined on a resample: left out)."""
    if n == 0:
        return Statistic(name, None, None, None, 0, _undefined("agreement_no_units"))
    if not np.isfinite(observed):
        return Statistic(name, None, None, None, n, _undefined(why))
    defined = replicates[np.isfinite(replicates)]
    low = high = None
    if len(defined):
        tail = (1.0 - confidence) / 2.0
        ends = np.quantile(defined, [tail, 1.0 - tail])
        low, high = float(ends[0]), float(ends[1])
    return Statistic(name, float(observed), low, high, n, _small(n))


# --- contingency tables: kappa, weighted kappa, accuracy, balanced accuracy, F1 -----------


def _tables(cells: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap resamples of a k x k table of ``n`` units: multinomial draws of its cells
    (the same law as drawing the units), shape (resamples, k, k)."""
    n = int(cells.sum())
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, cells.ravel() / max(n, 1), size=resamples)
    return draws.reshape(resamples, *cells.shape).astype(np.float64)


def _kappa(tables: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each table (..., k, k), 1 - sum(w*O)/sum(w*E) with E from the
    margins: w = 1 - identity gives the unweighted kappa. NaN where sum(w*E) is 0."""
    n = tables.sum(axis=(-2, -1))
    expected = tables.sum(axis=-1)[..., :, None] * tables.sum(axis=-2)[..., None, :]
    disagree = (weights * tables).sum(axis=(-2, -1))
    chance = (weights * expected).sum(axis=(-2, -1)) / np.where(n > 0, n, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance > 1e-12 * np.maximum(n, 1.0), 1.0 - disagree / chance, np.nan)


def _accuracy(tables: np.ndarray) -> np.ndarray:
    return _ratio(np.trace(tables, axis1=-2, axis2=-1), tables.sum(axis=-2).sum(axis=-1))


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def _balanced_accuracy(tables: np.ndarray) -> np.ndarray:
    """Mean recall of the two human classes (columns); NaN when humans gave one class."""
    fail = _ratio(tables[..., 0, 0], tables[..., :, 0].sum(axis=-1))
    passed = _ratio(tables[..., 1, 1], tables[..., :, 1].sum(axis=-1))
    mean: np.ndarray = (fail + passed) / 2.0
    return mean


def _f1_fail(tables: np.ndarray) -> np.ndarray:
    """F1 with fail (index 0) as positive: 2tp / (2tp + fp + fn)."""
    tp = tables[..., 0, 0]
    return _ratio(2.0 * tp, 2.0 * tp + tables[..., 0, 1] + tables[..., 1, 0])


def _cells(judge: np.ndarray, human: np.ndarray, categories: Sequence[float]) -> np.ndarray:
    index = {float(c): i for i, c in enumerate(categories)}
    k = len(categories)
    rows = np.array([index[float(v)] for v in judge], dtype=np.int64)
    cols = np.array([index[float(v)] for v in human], dtype=np.int64)
    return np.bincount(rows * k + cols, minlength=k * k).reshape(k, k).astype(np.float64)


def _cohen(tables: np.ndarray) -> np.ndarray:
    return _kappa(tables, 1.0 - np.eye(tables.shape[-1]))


def _quadratic(tables: np.ndarray) -> np.ndarray:
    ranks = np.arange(tables.shape[-1], dtype=np.float64)
    return _kappa(tables, ((ranks[:, None] - ranks[None, :]) / max(len(ranks) - 1, 1)) ** 2)


#: a statistic of contingency tables, and the note's code where it is undefined
_FORMULAS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "cohen_kappa": (_cohen, "agreement_one_class"),
    "weighted_kappa": (_quadratic, "agreement_one_class"),
    "accuracy": (_accuracy, "agreement_no_units"),
    "balanced_accuracy": (_balanced_accuracy, "agreement_one_human_class"),
    "f1": (_f1_fail, "agreement_no_failures"),
}


def _table_statistics(
    cells: np.ndarray, names: Sequence[str], confidence: float, resamples: int, seed: int
) -> list[Statistic]:
    n = int(cells.sum())
    drawn = _tables(cells, resamples, seed) if n else np.zeros((0, *cells.shape))
    out = []
    for name in names:
        formula, why = _FORMULAS[name]
        observed = float(formula(cells[None])[0]) if n else float("nan")
        out.append(_statistic(name, observed, formula(drawn), n, confidence, why))
    return out


# --- ranks: Spearman's rho on weighted (resampled) units ------------------------------------


def _weighted_ranks(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their ranks) of each unit among ``counts[b]``
    copies of every unit: the ranks within each resample, shape (b, n)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts_group = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(starts_group) - 1
    sizes = np.add.reduceat(counts[:, order], np.flatnonzero(starts_group), axis=1)
    average = np.cumsum(sizes, axis=1) - sizes + (sizes + 1.0) / 2.0
    ranks = np.empty_like(counts)
    ranks[:, order] = average[:, group]
    return ranks


def _spearman(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Spearman's rho of each resample (the Pearson correlation of average ranks, units
    weighted by their counts); NaN where one side is constant."""
    rx, ry = _weighted_ranks(x, counts), _weighted_ranks(y, counts)
    total = counts.sum(axis=1, keepdims=True)
    dx = rx - (counts * rx).sum(axis=1, keepdims=True) / total
    dy = ry - (counts * ry).sum(axis=1, keepdims=True) / total
    sxy = (counts * dx * dy).sum(axis=1)
    sxx, syy = (counts * dx * dx).sum(axis=1), (counts * dy * dy).sum(axis=1)
    scale = np.sqrt(sxx * syy)
    tiny = 1e-12 * (total[:, 0] ** 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where((sxx > tiny) & (syy > tiny), sxy / np.where(scale > 0, scale, 1.0), np.nan)
    clipped: np.ndarray = np.clip(rho, -1.0, 1.0)
    return clipped


def _spearman_statistic(
    x: np.ndarray, y: np.ndarray, confidence: float, resamples: int, seed: int
) -> Statistic:
    n = len(x)
    if n == 0:
        return _statistic("spearman", float("nan"), np.empty(0), 0, confidence, "")
    observed = float(_spearman(x, y, np.ones((1, n)))[0])
    chunks = unit_counts(n, resamples, seed, max_draws=_RANK_DRAWS)
    drawn = [_spearman(x, y, counts) for counts in chunks]
    replicates = np.concatenate(drawn) if drawn else np.empty(0)
    return _statistic("spearman", observed, replicates, n, confidence, "agreement_constant")


# --- judge vs human -------------------------------------------------------------------------


def _as_values(values: Any, what: str) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what}: values must be numbers or None ({exc})") from exc


def _binarised(
    judge: np.ndarray, human: np.ndarray, threshold: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Both sides as 0/1: as they are when all are 0/1, else ``value >= threshold``."""
    both = np.concatenate([judge, human])
    if np.all((both == 0.0) | (both == 1.0)):
        return judge, human
    if threshold is None:
        raise ConfigError(
            "binary agreement: values other than 0/1 need a threshold (value >= threshold = pass)"
        )
    return (judge >= threshold).astype(np.float64), (human >= threshold).astype(np.float64)


def _confusion(cells: np.ndarray, categories: Sequence[float]) -> Confusion:
    counts = tuple(tuple(int(c) for c in row) for row in cells)
    return Confusion(tuple(float(c) for c in categories), counts)


def _ordinal_categories(
    judge: np.ndarray, human: np.ndarray, categories: Sequence[float] | None
) -> list[float]:
    seen = sorted({float(v) for v in np.concatenate([judge, human])})
    if categories is None:
        return seen
    allowed = sorted({float(c) for c in categories})
    outside = [v for v in seen if v not in set(allowed)]
    if outside:
        raise ConfigError(f"ordinal agreement: values {outside[:5]} are not among the categories")
    return allowed


def judge_agreement(
    judge: Any,
    human: Any,
    *,
    kind: Kind,
    categories: Sequence[float] | None = None,
    threshold: float | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    against: str = "human",
) -> Agreement:
    """The judge's agreement with human values of the same rows (same order, None or NaN
    where missing: such rows are dropped). ``kind`` picks the statistics (module
    docstring); ``categories`` fixes an ordinal scale (else the values seen);
    ``against`` names who the human values are (a reviewer, or "majority")."""
    j, h = _as_values(judge, "judge"), _as_values(human, "human")
    if len(j) != len(h):
        raise ConfigError(f"agreement: {len(j)} judge values but {len(h)} human values")
    keep = ~(np.isnan(j) | np.isnan(h))
    j, h = j[keep], h[keep]
    stats: list[Statistic] = []
    confusion = None
    if kind == "ordinal":
        scale = _ordinal_categories(j, h, categories)
        cells = _cells(j, h, scale)
        stats += _table_statistics(cells, ("weighted_kappa",), confidence, resamples, seed)
        stats.append(_spearman_statistic(j, h, confidence, resamples, seed))
        stats += _table_statistics(cells, ("accuracy",), confidence, resamples, seed)
        confusion = _confusion(cells, scale)
    elif kind == "binary" or (kind == "continuous" and threshold is not None):
        if kind == "continuous":
            stats.append(_spearman_statistic(j, h, confidence, resamples, seed))
        jb, hb = _binarised(j, h, threshold)
        cells = _cells(jb, hb, _BINARY)
        stats += _table_statistics(cells, _BINARY_NAMES, confidence, resamples, seed)
        confusion = _confusion(cells, _BINARY)
    elif kind == "continuous":
        stats.append(_spearman_statistic(j, h, confidence, resamples, seed))
    else:
        raise ConfigError(f"agreement: unknown kind {kind!r} (binary, ordinal or continuous)")
    return Agreement(kind, against, int(keep.sum()), tuple(stats), confusion)


# --- among reviewers ------------------------------------------------------------------------


def majority(matrix: np.ndarray, *, kind: Kind, threshold: float | None = None) -> np.ndarray:
    """Per unit (row of units x reviewers, NaN = not labelled) the reviewers' value:
    binary, the majority vote (values binarised by ``threshold`` unless all 0/1), NaN on a
    tie (no majority: the unit is left out rather than settled by a coin); ordinal, the
    median, NaN when an even number of labels has two different middle values (a tie
    again); continuous, the mean. NaN where a unit has no label."""
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ConfigError("majority: a matrix of units x reviewers is needed")
    labelled = ~np.isnan(values)
    count = labelled.sum(axis=1)
    if kind == "binary":
        seen = values[labelled]
        if not np.all((seen == 0.0) | (seen == 1.0)):
            if threshold is None:
                raise ConfigError("majority: values other than 0/1 need a threshold")
            values = np.where(labelled, (values >= threshold).astype(np.float64), np.nan)
        passes = np.nansum(values, axis=1)
        fails = count - passes
        return np.where(passes > fails, 1.0, np.where(fails > passes, 0.0, np.nan))
    if kind == "ordinal":
        ordered = np.sort(values, axis=1)  # NaN sorts last
        rows = np.arange(len(values))
        low = ordered[rows, np.maximum((count - 1) // 2, 0)]
        high = ordered[rows, np.maximum(count // 2, 0)]
        return np.where((count > 0) & (low == high), low, np.nan)
    if kind == "continuous":
        total = np.where(labelled, values, 0.0).sum(axis=1)
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)
    raise ConfigError(f"majority: unknown kind {kind!r} (binary, ordinal or continuous)")


def reviewers_alpha(
    matrix: np.ndarray,
    *,
    level: Level,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Statistic:
    """Krippendorff's alpha among reviewers (units x reviewers, NaN = not labelled) at
    the ``level`` of measurement: 1 is perfect agreement, 0 chance. Units with fewer than
    two labels cannot be paired and are left out; ``n`` counts the units used."""
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ConfigError("reviewers_alpha: a matrix of units x reviewers is needed")
    if level not in ("nominal", "ordinal", "interval"):
        raise ConfigError(f"reviewers_alpha: unknown level {level!r}")
    values = values[(~np.isnan(values)).sum(axis=1) >= 2]
    n = len(values)
    if n == 0:
        return Statistic(
            "krippendorff_alpha", None, None, None, 0, _undefined("agreement_no_pairable")
        )
    if level == "interval":
        observed, replicates = interval_alpha(values, resamples, seed)
    else:
        observed, replicates = categorical_alpha(values, level, resamples, seed)
    return _statistic(
        "krippendorff_alpha", observed, replicates, n, confidence, "agreement_one_value"
    )
