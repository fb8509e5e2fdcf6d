"""Two runs compared: per metric (means, delta, CI, test), then row by row
(``GET /runs/{id}/compare/{base}/rows``, ``.../scatter``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ragmeter.wire.pages import Page


class ComparisonNote(BaseModel):
    """One remark in a comparison's ``note``, for a reader's language: its ``code``
    (``unpaired``: no row scored in both runs, with ``by``, ``scored_a``, ``scored_b``;
    ``disagree``: the test and the interval disagree, with ``p``, ``low``, ``high``,
    ``alpha``; ``bca_*``: why the interval is not BCa, ``bca_few`` with ``n``) and its
    values."""

    code: str
    values: dict[str, float | int | str] = Field(default_factory=dict)


class MetricComparison(BaseModel):
    """One metric of two runs: means over each run's scored rows, and over the ``paired``
    rows both scored, ``delta`` = other - base with its confidence interval
    (``ci95_low``/``ci95_high``): with ``correction`` bonferroni (compare's default) a 95%
    family-wise interval, every one of the ``family`` metrics' intervals made at ``ci_level``
    = 1 - 0.05/family so that all hold together; with none (the gate's) each metric's own 95%
    interval. ``better``/``worse``/``same`` count paired rows. ``p_value`` is the paired
    sign-flip test of delta = 0, ``p_adjusted`` the same corrected as the interval is
    (times ``family``, capped at 1). ``verdict``: better/worse when ``p_adjusted`` <= the
    alpha asked (default 0.05) and the interval excludes 0; equivalent when a ``margin`` was
    asked and the interval lies inside +-margin; else no_evidence (no evidence of a
    difference, which is not sameness). ``ci_note`` says why the interval is not
    informative (fewer than 30 pairs, all differences equal); ``note`` says why ``delta``
    is null (no pair), why the CI is not BCa, or that the test and the interval disagree.
    ``scale`` is the metric's range (``0-1``) where known."""

    metric_name: str
    base_mean: float | None
    other_mean: float | None
    paired: int
    delta: float | None
    ci95_low: float | None
    ci95_high: float | None
    better: int
    worse: int
    same: int
    note: str | None = None
    #: ``note``'s remarks with their codes and values (the dashboard says them in its language)
    notes: list[ComparisonNote] = Field(default_factory=list)
    #: bca, percentile (BCa undefined: few pairs or no spread; ``note`` says which) or abc
    #: (BCa's analytic form, used from 1,000 pairs on)
    ci_method: Literal["bca", "percentile", "abc"] | None = None
    p_value: float | None = None
    #: exact (all sign patterns), randomisation (Monte-Carlo) or normal (many pairs)
    p_method: Literal["exact", "randomisation", "normal"] | None = None
    p_adjusted: float | None = None
    verdict: Literal["better", "worse", "no_evidence", "equivalent"] | None = None
    #: rows scored in one run whose query (or id) has no score in the other run
    base_unpaired: int = 0
    other_unpaired: int = 0
    #: each run's own mean corrected by its human labels (``reports.calibrated``: value,
    #: low, high, n_labelled, ...), where the run has labels of this metric; unpaired, not
    #: a test of the difference
    base_calibrated: dict[str, Any] | None = None
    other_calibrated: dict[str, Any] | None = None
    #: what rows pair by: their ``id`` when every row of both runs has one, else query text
    paired_by: Literal["query", "id"] = "query"
    correction: Literal["bonferroni", "none"] = "bonferroni"
    #: metrics in the family the correction spans (those with pairs)
    family: int = 1
    #: the level all the family's intervals hold at together (1 - alpha)
    confidence: float = 0.95
    #: the confidence level each metric's interval is made at (0.99 for 5 metrics)
    ci_level: float | None = None
    #: the equivalence margin asked for (in the metric's own units), if any
    margin: float | None = None
    ci_note: str | None = None
    small_sample: bool = False
    scale: str | None = None


class RowPair(BaseModel):
    """One row of both runs for one metric: its pairing ``key`` (the row's ``id``, or its
    query text), each run's row index and score, and ``delta`` = candidate - baseline (null
    when either score is)."""

    key: str | int
    base_index: int
    other_index: int
    query: str
    base_score: float | None
    other_score: float | None
    delta: float | None


class RowPairPage(Page[RowPair]):
    """A page of pairs, largest regression first; ``paired_by`` as in ``MetricComparison``."""

    paired_by: Literal["query", "id"] = "query"


class ScatterPoint(BaseModel):
    """``count`` pairs at baseline score ``x`` and candidate score ``y`` (a cell's centre on
    a grid)."""

    x: float
    y: float
    count: int


class Scatter(BaseModel):
    """Pairs both runs scored, as points with their multiplicity; past ``MAX_POINTS``
    distinct points, counts on a ``grid`` x ``grid`` grid over [``low``, ``high``] on both
    axes (``mode`` says which), so the page never receives every pair."""

    metric_name: str
    mode: Literal["points", "grid"]
    points: list[ScatterPoint]
    paired: int
    low: float
    high: float
    grid: int | None = None
    paired_by: Literal["query", "id"] = "query"
