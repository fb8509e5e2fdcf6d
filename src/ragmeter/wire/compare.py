"""Two runs compared: per metric (means, delta, CI, test), then row by row
(``GET /runs/{id}/compare/{base}/rows``, ``.../scatter``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ragmeter.wire.pages import Page


class MetricComparison(BaseModel):
    """One metric of two runs: means over each run's scored rows, and over the ``paired``
    rows both scored, ``delta`` = other - base with its 95% CI; ``better``/``worse``/``same``
    count paired rows. ``p_value`` is the paired sign-flip test of delta = 0, ``p_holm`` the
    same corrected across the compared metrics (Holm), and ``verdict`` says better/worse at
    the alpha asked (default 0.05) on ``p_holm``, same otherwise. ``note`` says why
    ``delta`` is null (no pair) or why the CI is not BCa."""

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
    #: bca, percentile (BCa undefined: few pairs or no spread; ``note`` says which) or abc
    #: (BCa's analytic form, used from 1,000 pairs on)
    ci_method: Literal["bca", "percentile", "abc"] | None = None
    p_value: float | None = None
    #: exact (all sign patterns), randomisation (Monte-Carlo) or normal (many pairs)
    p_method: Literal["exact", "randomisation", "normal"] | None = None
    p_holm: float | None = None
    verdict: Literal["better", "worse", "same"] | None = None
    #: rows scored in one run whose query (or id) has no score in the other run
    base_unpaired: int = 0
    other_unpaired: int = 0
    #: what rows pair by: their ``id`` when every row of both runs has one, else query text
    paired_by: Literal["query", "id"] = "query"


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
