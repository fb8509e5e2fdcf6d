"""Two runs side by side: per metric, each run's mean and the paired difference over the rows
both scored, with a bootstrap 95% CI, so "did this change help?" has an answer with error bars.
Rows pair by query text (the n-th occurrence of a query with the n-th in the other run)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from ragmeter.errors import ConfigError
from ragmeter.reports._bootstrap import bootstrap_mean_ci
from ragmeter.wire import MetricComparison

__all__ = ["MetricComparison", "compare_scores"]

#: (query, metric_name, score) of one run, in row order
Scored = Iterable[tuple[str, str, float | None]]


def _keyed(scores: Scored) -> dict[str, dict[tuple[str, int], float | None]]:
    seen: dict[tuple[str, str], int] = defaultdict(int)
    out: dict[str, dict[tuple[str, int], float | None]] = defaultdict(dict)
    for query, metric, score in scores:
        nth = seen[(metric, query)]
        seen[(metric, query)] += 1
        out[metric][(query, nth)] = score
    return out


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def _unpaired(
    base: dict[tuple[str, int], float | None], other: dict[tuple[str, int], float | None]
) -> str:
    """Why a metric has no pair: how many rows each run scored."""
    scored_a = sum(v is not None for v in base.values())
    scored_b = sum(v is not None for v in other.values())
    return (
        f"no query is scored in both runs ({scored_a} rows scored in the base run, {scored_b} "
        "in the other; rows pair by query text)"
    )


def compare_scores(base: Scored, other: Scored) -> list[MetricComparison]:
    """Metrics both runs have, in the base run's order. ConfigError when the runs share no
    metric, or no query scored in both (a comparison of nothing is not a result); a metric
    without pairs has ``delta`` null and a ``note`` saying why."""
    a, b = _keyed(base), _keyed(other)
    shared = [m for m in a if m in b]
    if not shared:
        raise ConfigError(
            f"the runs share no metric (base: {', '.join(a) or 'none'}; other: "
            f"{', '.join(b) or 'none'})"
        )
    out: list[MetricComparison] = []
    for metric in shared:
        pairs = [
            (score, b[metric][key])
            for key, score in a[metric].items()
            if score is not None and b[metric].get(key) is not None
        ]
        diffs = np.asarray([float(o) - float(s) for s, o in pairs if o is not None])
        low = high = delta = None
        if len(diffs):
            delta = float(diffs.mean())
            low, high = bootstrap_mean_ci(diffs)
        out.append(
            MetricComparison(
                metric_name=metric,
                base_mean=_mean(a[metric].values()),
                other_mean=_mean(b[metric].values()),
                paired=len(diffs),
                delta=delta,
                ci95_low=low,
                ci95_high=high,
                better=int((diffs > 1e-12).sum()),
                worse=int((diffs < -1e-12).sum()),
                same=int((np.abs(diffs) <= 1e-12).sum()),
                note=None if len(diffs) else _unpaired(a[metric], b[metric]),
            )
        )
    if all(c.paired == 0 for c in out):
        raise ConfigError(
            "the runs share no scored query: no query has a score in both runs for any of "
            f"their metrics ({', '.join(shared)}); rows pair by query text"
        )
    return out
