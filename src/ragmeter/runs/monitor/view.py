"""The monitor of production metrics as the API answers it: each metric's buckets over a
time range, and the drift of the last window against a baseline (the scores before that
window, or a stored run's scores of the metric), every metric of the answer one family."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from ragmeter.errors import ConfigError, ConflictError, NotFoundError, clip
from ragmeter.reports.monitor import (
    BUCKETS,
    MAX_BUCKETS,
    Bucket,
    BucketStats,
    Drift,
    bucket_series,
    drift,
)
from ragmeter.runs.monitor.alerts import ScoreReader, parse_window
from ragmeter.runs.views.compare import check_options
from ragmeter.runs.views.sides import read_side
from ragmeter.store.db import Store
from ragmeter.store.models import RunRecord
from ragmeter.wire.compare import ComparisonNote
from ragmeter.wire.monitor import BucketOut, DriftOut, MetricMonitor, MonitorOut

__all__ = ["MAX_METRICS", "MonitorAsk", "monitor", "run_scores"]

#: the most metrics one monitor answer holds
MAX_METRICS = 20
#: past this, nanoseconds since the epoch overflow 64 bits (the year 2262)
_LAST_NS = 2**63 - 1
_DEFAULT_RANGE_NS: dict[Bucket, int] = {"hour": 86_400 * 10**9, "day": 30 * 86_400 * 10**9}


@dataclass(frozen=True)
class MonitorAsk:
    """What the monitor is asked: metrics, buckets, the range (ns; None: the last day in
    hours, the last 30 days in days, until now), the recent window (None: one bucket), the
    baseline (``window`` or ``run:ID``) and alpha."""

    metrics: tuple[str, ...]
    bucket: Bucket = "hour"
    since_ns: int | None = None
    until_ns: int | None = None
    window: str | None = None
    baseline: str = "window"
    alpha: float = 0.05


def _time(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)


def run_scores(store: Store, run_id: str, metric: str) -> np.ndarray:
    """A stored run's scored values of ``metric`` (nulls left out)."""
    with store.session() as session:
        if session.get(RunRecord, run_id) is None:
            raise NotFoundError(f"baseline: no run '{clip(run_id)}'")
        side, _rows = read_side(session, run_id, metric, "query")
    scored: np.ndarray = side.scores[~np.isnan(side.scores)]
    return scored


def _range(ask: MonitorAsk, now_ns: int) -> tuple[int, int, int]:
    """(since, recent window's start, until), checked."""
    until = ask.until_ns if ask.until_ns is not None else now_ns
    since = ask.since_ns if ask.since_ns is not None else until - _DEFAULT_RANGE_NS[ask.bucket]
    window = parse_window(ask.window) if ask.window else (3_600 if ask.bucket == "hour" else 86_400)
    recent = until - window * 10**9
    if not since < until:
        raise ConfigError("since: must be before until")
    if since < 0 or until >= _LAST_NS:
        raise ConfigError("since, until: times from 1970 to 2262 (UTC)")
    width = BUCKETS[ask.bucket]
    count = (until - 1) // width - since // width + 1  # UTC buckets the range touches
    if count > MAX_BUCKETS:  # refused before a score of it is read
        raise ConfigError(
            f"since, until: {count} {ask.bucket} buckets; at most {MAX_BUCKETS} "
            "(choose a shorter time range or day buckets)"
        )
    if ask.baseline == "window" and not since < recent:
        raise ConfigError(
            f"window: the recent window ({ask.window or '1 ' + ask.bucket}) leaves no time "
            "between since and it for the baseline; choose an earlier since or a shorter window"
        )
    return since, max(since, recent), until


def _bucket(found: BucketStats) -> BucketOut:
    return BucketOut(
        start=_time(found.start_ns),
        mean=found.mean,
        ci95_low=found.ci95_low,
        ci95_high=found.ci95_high,
        n=found.n,
        nulls=found.nulls,
        ci_note=found.ci_note,
        small_sample=found.small_sample,
    )


def _drift(found: Drift, family: int) -> DriftOut:
    notes = [n for n in (found.ci.note, found.verdict_note) if n]
    return DriftOut(
        recent_n=found.recent_n,
        baseline_n=found.baseline_n,
        recent_mean=found.recent_mean,
        baseline_mean=found.baseline_mean,
        delta=found.delta,
        ci_low=found.ci.low,
        ci_high=found.ci.high,
        ci_method=found.ci.method,
        ci_level=found.ci_level,
        p_value=found.p_value,
        p_method=found.p_method,
        p_adjusted=found.p_adjusted,
        verdict=found.verdict,
        correction="bonferroni",
        family=family,
        ci_note=found.ci_note,
        notes=[ComparisonNote(code=n.code, values=dict(n.values)) for n in notes],
    )


def _check(ask: MonitorAsk) -> None:
    if not 1 <= len(ask.metrics) <= MAX_METRICS:
        raise ConfigError(f"metric: name 1 to {MAX_METRICS} metrics, not {len(ask.metrics)}")
    if ask.baseline != "window" and not (ask.baseline.startswith("run:") and ask.baseline[4:]):
        raise ConfigError(f"baseline: '{clip(ask.baseline)}'; choose 'window' or 'run:RUN_ID'")
    check_options(ask.alpha, None)


def monitor(ask: MonitorAsk, reader: ScoreReader | None, store: Store, now_ns: int) -> MonitorOut:
    """The buckets and drift verdicts of ``ask``'s metrics; ConflictError with no reader
    (a server that keeps no production scores)."""
    _check(ask)
    since, recent_since, until = _range(ask, now_ns)
    if reader is None:
        raise ConflictError("this server keeps no trace scores: production traces are not stored")
    series: dict[str, list[BucketOut]] = {}
    samples: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for metric in dict.fromkeys(ask.metrics):
        times, values = reader(metric, since, until)
        times, values = np.asarray(times, dtype=np.int64), np.asarray(values, dtype=np.float64)
        try:
            series[metric] = [_bucket(b) for b in bucket_series(times, values, ask.bucket)]
        except ValueError as exc:
            raise ConfigError(f"bucket: {exc}") from None
        scored = ~np.isnan(values)
        recent = values[scored & (times >= recent_since)]
        if ask.baseline == "window":
            base = values[scored & (times < recent_since)]
        else:
            base = run_scores(store, ask.baseline[4:], metric)
        samples[metric] = (recent, base)
    found = drift(samples, alpha=ask.alpha)
    out = []
    for metric, buckets in series.items():
        recent, base = samples[metric]
        note, empty = None, None
        if metric not in found:
            empty = "recent" if not len(recent) else "baseline"
            side = "the recent window" if empty == "recent" else "the baseline"
            note = f"no drift test: {side} has no scored value of {metric}"
        tested = found.get(metric)
        out.append(
            MetricMonitor(
                metric=metric,
                buckets=buckets,
                drift=None if tested is None else _drift(tested, len(found)),
                note=note,
                empty_side=empty,
            )
        )
    return MonitorOut(
        since=_time(since),
        until=_time(until),
        bucket=ask.bucket,
        recent_since=_time(recent_since),
        baseline=ask.baseline,
        alpha=ask.alpha,
        metrics=out,
    )
