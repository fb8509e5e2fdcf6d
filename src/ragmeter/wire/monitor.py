"""Monitors and alerts as the API answers them: a metric of production traces over time
(``GET /online/monitor``), alert rules (``/online/alerts``) and their episodes
(``GET /online/alert-events``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.wire.compare import ComparisonNote

__all__ = [
    "AlertEventOut",
    "AlertRuleIn",
    "AlertRuleOut",
    "AlertRulePatch",
    "BucketOut",
    "DriftOut",
    "MetricMonitor",
    "MonitorOut",
]


class BucketOut(BaseModel):
    """One hour or day (UTC) from ``start``: the mean of its scored values with the mean's
    95% interval, ``n`` scored values and ``nulls``; ``ci_note`` says why the interval says
    little (``small_sample``: fewer than 30 values)."""

    start: datetime
    mean: float | None = None
    ci95_low: float | None = None
    ci95_high: float | None = None
    n: int
    nulls: int
    ci_note: str | None = None
    small_sample: bool


class DriftOut(BaseModel):
    """The recent window against the baseline: ``delta`` = recent - baseline mean with its
    interval (``ci_level``: 1 - alpha/family under Bonferroni, as compare makes it), the
    two-sample permutation test's p (``p_method``: exact, randomisation or normal), the p
    adjusted across the ``family`` of metrics, and compare's verdict (better, worse or
    no_evidence: no evidence of a difference)."""

    recent_n: int
    baseline_n: int
    recent_mean: float
    baseline_mean: float
    delta: float
    ci_low: float
    ci_high: float
    ci_method: str
    ci_level: float
    p_value: float
    p_method: str
    p_adjusted: float
    verdict: Literal["better", "worse", "no_evidence", "equivalent"]
    correction: str
    family: int
    ci_note: str | None = None
    notes: list[ComparisonNote] = Field(default_factory=list)


class MetricMonitor(BaseModel):
    """One metric: its buckets, and its drift (None when a side has no scored value; the
    ``note`` says which)."""

    metric: str
    buckets: list[BucketOut]
    drift: DriftOut | None = None
    note: str | None = None
    #: the side with no scored value when there is no drift test: ``recent`` or ``baseline``
    empty_side: Literal["recent", "baseline"] | None = None


class MonitorOut(BaseModel):
    """The metrics asked for over ``since``..``until`` in ``bucket`` buckets; drift of the
    ``recent`` window (its start) against ``baseline`` (``window``: the scores before it;
    ``run:ID``: that run's scores of each metric)."""

    since: datetime
    until: datetime
    bucket: Literal["hour", "day"]
    recent_since: datetime
    baseline: str
    alpha: float
    metrics: list[MetricMonitor]


class AlertRuleIn(BaseModel):
    """A new alert rule: a name, the rule (``faithfulness.mean < 0.8 over 1h with n >=
    50``) and, optionally, the URL its episodes are posted to."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    expression: str = Field(min_length=1, max_length=500)
    webhook_url: str | None = Field(default=None, max_length=2000)
    enabled: bool = True


class AlertRulePatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool


class AlertRuleOut(BaseModel):
    """A rule as stored, its canonical form (``rule``: with its window and n spelled out)
    and whether an episode is open (``firing``). The webhook shows as its scheme and host
    only: a webhook URL's path or query is often its secret (``webhook``)."""

    name: str
    expression: str
    rule: str
    webhook: str | None = None
    enabled: bool
    firing: bool = False
    created_by: str | None = None
    created_at: datetime | None = None


class AlertEventOut(BaseModel):
    """One episode: when it fired (``value`` of the statistic over ``n`` values then),
    when it resolved (None while firing) and what each webhook delivery gave."""

    id: int
    rule: str
    fired_at: datetime
    value: float
    n: int
    resolved_at: datetime | None = None
    resolved_value: float | None = None
    resolved_n: int | None = None
    fired_delivery: str | None = None
    resolved_delivery: str | None = None
