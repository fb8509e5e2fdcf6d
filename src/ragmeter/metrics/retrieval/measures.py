"""trec_eval's other measures (and ranx's and ir_measures' names for them), each a ranking
metric over the same judgements: R-precision, bpref, interpolated precision, the set measures,
the counts, the gain measures. Definitions: ``_kernels`` and ``_gain_loops``; names and
aliases: the table in the documentation (``ragmeter metrics`` lists them)."""

from __future__ import annotations

import math
from typing import ClassVar, Unpack

import numpy as np

from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.metrics.retrieval._judge import Buckets, Judgements
from ragmeter.metrics.retrieval._kernels import ELEVEN_POINTS, Cut, Options
from ragmeter.metrics.retrieval.ranking import (
    Aggregate,
    GainMetric,
    RankingMetric,
    RankingParams,
)

__all__ = [
    "RetrieverBinaryGainMetric",
    "RetrieverBprefMetric",
    "RetrieverDCGBurgesMetric",
    "RetrieverDCGMetric",
    "RetrieverF1Metric",
    "RetrieverGMBprefMetric",
    "RetrieverGMMAPMetric",
    "RetrieverIPrecAvgMetric",
    "RetrieverIPrecMetric",
    "RetrieverInfAPMetric",
    "RetrieverNDCGBurgesMetric",
    "RetrieverNDCGRelMetric",
    "RetrieverNormalizedGainMetric",
    "RetrieverNumNonrelJudgedRetMetric",
    "RetrieverNumQMetric",
    "RetrieverNumRelMetric",
    "RetrieverNumRelRetMetric",
    "RetrieverNumRetMetric",
    "RetrieverRBPMetric",
    "RetrieverRBPResidualMetric",
    "RetrieverRNDCGMetric",
    "RetrieverRPrecisionMetric",
    "RetrieverRPrecisionMultMetric",
    "RetrieverRelativePrecisionMetric",
    "RetrieverSetFMetric",
    "RetrieverSetMAPMetric",
    "RetrieverSetPrecisionMetric",
    "RetrieverSetRelativePrecisionMetric",
    "RetrieverUnjudgedMetric",
    "RetrieverUtilityMetric",
]


@register_metric("r_precision", aliases=("Rprec", "r-precision", "r_prec"))
class RetrieverRPrecisionMetric(RankingMetric):
    """R-precision: relevant items in the top R / R, R the row's relevant items (trec_eval's
    Rprec)."""

    kernel = "r_precision"


@register_metric("bpref")
class RetrieverBprefMetric(RankingMetric):
    """bpref: over the relevant items retrieved, 1 - (judged non-relevant items above it, at
    most R) / min(R, judged non-relevant items), summed and divided by R (Buckley and
    Voorhees); unjudged items are skipped."""

    kernel = "bpref"


@register_metric("gm_bpref")
class RetrieverGMBprefMetric(RankingMetric):
    """bpref of each row; trec_eval's all line is their geometric mean (values floored at
    1e-5), a table shows the mean."""

    kernel = "bpref"
    aggregate: ClassVar[Aggregate] = "gmean"


@register_metric("gm_map", aliases=("GMAP", "gm_ap"))
class RetrieverGMMAPMetric(RankingMetric):
    """Average precision of each row; trec_eval's all line is their geometric mean (values
    floored at 1e-5), a table shows the mean."""

    kernel = "map"
    aggregate: ClassVar[Aggregate] = "gmean"


@register_metric("infap", aliases=("infAP", "inf_ap"))
class RetrieverInfAPMetric(RankingMetric):
    """Inferred AP (Yilmaz and Aslam): AP estimated where items in the pool were not assessed
    (a negative grade), as trec_eval's infAP."""

    kernel = "infap"


class _AtMetric(RankingMetric):
    """A measure whose ``@`` value is not a rank cut-off but a number of another kind."""

    def __init__(self, at: float | None = None, **params: Unpack[RankingParams]) -> None:
        super().__init__(None, **params)
        if at is None or isinstance(at, bool) or not isinstance(at, int | float):
            raise ValueError(f"give its {self.at_name} after @ (e.g. {self.example})")
        if not math.isfinite(at) or not self.low <= at <= self.high:
            raise ValueError(
                f"its {self.at_name} must be a number from {self.low:g} to {self.high:g}, got {at}"
            )
        self.at = float(at)

    at_name: ClassVar[str]
    example: ClassVar[str]
    low: ClassVar[float]
    high: ClassVar[float]

    def cut(self, ctx: EvaluationContext | None) -> Cut:
        return self.at


@register_metric("iprec", aliases=("IPrec", "iprec_at_recall", "interpolated_precision"))
class RetrieverIPrecMetric(_AtMetric):
    """Interpolated precision at a recall level r (``iprec@0.1``): the best precision at any
    rank with recall >= r, r counted as round(r R) relevant items (trec_eval's
    iprec_at_recall)."""

    kernel = "iprec"
    at_name, example, low, high = "recall level", "iprec@0.1", 0.0, 1.0


@register_metric("r_precision_mult", aliases=("Rprec_mult",))
class RetrieverRPrecisionMultMetric(_AtMetric):
    """Precision at rank m R (``r_precision_mult@0.2``; trec_eval's Rprec_mult)."""

    kernel = "r_precision_mult"
    at_name, example, low, high = "multiple of R", "r_precision_mult@0.2", 1e-9, 1e6


def _levels(text: str | None) -> tuple[float, ...]:
    if text is None:
        return ELEVEN_POINTS
    body = str(text).strip().removeprefix("[").removesuffix("]")
    try:
        values = tuple(float(p) for p in body.replace(";", ",").split(",") if p.strip())
    except ValueError:
        raise ValueError(
            f"levels: expected recall levels such as [0.2,0.5,0.8], got {text!r}"
        ) from None
    if not values or not all(0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"levels: expected recall levels from 0 to 1, got {text!r}")
    return values


@register_metric("iprec_avg", aliases=("11pt_avg", "11pt", "eleven_point_avg"))
class RetrieverIPrecAvgMetric(RankingMetric):
    """Interpolated precision averaged over recall levels (0, 0.1, ..., 1 unless ``levels``
    says; trec_eval's 11pt_avg)."""

    kernel = "iprec_avg"

    def __init__(
        self,
        top_k: int | None = None,
        *,
        levels: str | None = None,
        **params: Unpack[RankingParams],
    ) -> None:
        super().__init__(top_k, **params)
        self.options = Options(levels=_levels(levels))


@register_metric("relative_precision", aliases=("relative_P", "rel_p"))
class RetrieverRelativePrecisionMetric(RankingMetric):
    """Relative precision@k: relevant items in the top k / min(k, R) (trec_eval's
    relative_P); without k, set_relative_precision."""

    kernel = "relative_precision"


@register_metric("set_precision", aliases=("set_P", "SetP"))
class RetrieverSetPrecisionMetric(RankingMetric):
    """Set precision: relevant retrieved / retrieved (with @k: of the first k retrieved, not
    padding a shorter list as precision@k does; trec_eval's set_P)."""

    kernel = "set_precision"


@register_metric("set_relative_precision", aliases=("set_relative_P", "SetRelP"))
class RetrieverSetRelativePrecisionMetric(RankingMetric):
    """Relevant retrieved / min(retrieved, R) (trec_eval's set_relative_P)."""

    kernel = "set_relative_precision"


@register_metric("set_map", aliases=("SetAP", "set_ap"))
class RetrieverSetMAPMetric(RankingMetric):
    """Unranked average precision: relevant retrieved**2 / (retrieved x R) (trec_eval's
    set_map)."""

    kernel = "set_map"


@register_metric("set_f", aliases=("set_F", "SetF"))
class RetrieverSetFMetric(RankingMetric):
    """Set F: (beta + 1) P R / (beta P + R) of set precision and recall (trec_eval's set_F;
    ``beta`` weighs recall, default 1)."""

    kernel = "set_f"

    def __init__(
        self,
        top_k: int | None = None,
        *,
        beta: float = 1.0,
        **params: Unpack[RankingParams],
    ) -> None:
        super().__init__(top_k, **params)
        if isinstance(beta, bool) or not isinstance(beta, int | float) or not 0 <= beta < math.inf:
            raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
        self.options = Options(beta=float(beta))


@register_metric("f1")
class RetrieverF1Metric(RankingMetric):
    """F1@k: the harmonic mean of precision@k and recall@k (ranx's f1)."""

    kernel = "f1"


@register_metric("utility")
class RetrieverUtilityMetric(RankingMetric):
    """Set utility a x relevant retrieved + b x non-relevant retrieved + c x relevant missed +
    d x non-relevant missed (trec_eval's utility; defaults 1, -1, 0, 0; ``n`` the collection's
    size for d). Defined on every row."""

    scale = (None, None)

    kernel = "utility"

    def __init__(
        self,
        top_k: int | None = None,
        *,
        a: float = 1.0,
        b: float = -1.0,
        c: float = 0.0,
        d: float = 0.0,
        n: int = 0,
        **params: Unpack[RankingParams],
    ) -> None:
        super().__init__(top_k, **params)
        coefficients = (a, b, c, d)
        if not all(isinstance(x, int | float) and math.isfinite(x) for x in coefficients):
            raise ValueError("a, b, c and d must be finite numbers")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n (the collection's size) must be a whole number >= 0, got {n!r}")
        self.options = Options(utility=(float(a), float(b), float(c), float(d)), collection_size=n)


@register_metric("num_ret", aliases=("NumRet",))
class RetrieverNumRetMetric(RankingMetric):
    """Items retrieved (with ``rel`` given: those of grade >= rel, as ir_measures' NumRet);
    trec_eval's all line sums them."""

    scale = (0.0, None)

    kernel = "num_ret"
    aggregate: ClassVar[Aggregate] = "sum"

    def score_judgements(
        self, judgements: Judgements | Buckets, ctx: EvaluationContext | None = None
    ) -> np.ndarray:
        if self.rel is None:
            return super().score_judgements(judgements, ctx)
        if isinstance(judgements, Buckets):
            return judgements.map(lambda group: self.score_judgements(group, ctx))
        if self.judged_only:
            judgements = judgements.judged_only()
        cut = self.cut(ctx)
        hits = judgements.cut(cut if isinstance(cut, int) else None).relevant(self.rel).sum(axis=1)
        return np.asarray(hits, dtype=np.float64)


@register_metric("num_rel", aliases=("NumRel",))
class RetrieverNumRelMetric(RankingMetric):
    """Relevant items judged for the row (R); trec_eval's all line sums them."""

    scale = (0.0, None)

    kernel = "num_rel"
    aggregate: ClassVar[Aggregate] = "sum"


@register_metric("num_rel_ret", aliases=("NumRelRet", "hits"))
class RetrieverNumRelRetMetric(RankingMetric):
    """Relevant items retrieved (in the top k; ranx's hits); trec_eval's all line sums them."""

    scale = (0.0, None)

    kernel = "num_rel_ret"
    aggregate: ClassVar[Aggregate] = "sum"


@register_metric("num_nonrel_judged_ret")
class RetrieverNumNonrelJudgedRetMetric(RankingMetric):
    """Items retrieved that are judged not relevant; trec_eval's all line sums them."""

    scale = (0.0, None)

    kernel = "num_nonrel_judged_ret"
    aggregate: ClassVar[Aggregate] = "sum"


@register_metric("num_q", aliases=("NumQ",))
class RetrieverNumQMetric(RankingMetric):
    """1 for every row evaluated: trec_eval's all line sums them (the number of queries)."""

    scale = (0.0, None)

    kernel = "num_q"
    aggregate: ClassVar[Aggregate] = "sum"


@register_metric("unjudged", aliases=("unj",))
class RetrieverUnjudgedMetric(RankingMetric):
    """Share of the top k that the row does not judge (trec_eval's unj_k)."""

    kernel = "unjudged"


@register_metric("dcg")
class RetrieverDCGMetric(GainMetric):
    """DCG@k = sum over the top k of gain / log2(rank + 1), not normalised (ranx's dcg)."""

    scale = (0.0, None)

    kernel = "dcg"


@register_metric("normalized_gain", aliases=("G",))
class RetrieverNormalizedGainMetric(GainMetric):
    """trec_eval's G: gain discounted by the cost so far, over the ideal's total gain."""

    scale = (0.0, None)

    kernel = "normalized_gain"


@register_metric("ndcg_rel")
class RetrieverNDCGRelMetric(GainMetric):
    """nDCG averaged over the ranks of the relevant items (trec_eval's ndcg_rel)."""

    kernel = "ndcg_rel"


@register_metric("r_ndcg", aliases=("Rndcg",))
class RetrieverRNDCGMetric(GainMetric):
    """nDCG averaged over the ranks where the ideal ranking's gain changes (trec_eval's
    Rndcg)."""

    kernel = "r_ndcg"
    graded = False  # null where nothing reaches the relevance level, as trec_eval has it


@register_metric("binary_gain", aliases=("binG", "bin_g"))
class RetrieverBinaryGainMetric(RankingMetric):
    """trec_eval's binG: mean over the relevant items of 1 / log2(2 + non-relevant items
    above it)."""

    kernel = "bin_g"


class _PersistenceMetric(GainMetric):
    def __init__(
        self,
        top_k: int | None = None,
        *,
        gains: str | None = None,
        p: float = 0.9,
        **params: Unpack[RankingParams],
    ) -> None:
        super().__init__(top_k, gains=gains, **params)
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 < p < 1.0:
            raise ValueError(f"p (the persistence) must be a number between 0 and 1, got {p!r}")
        self.options = Options(gains=self.options.gains, p=float(p))


@register_metric("rbp")
class RetrieverRBPMetric(_PersistenceMetric):
    """Rank-biased precision: (1 - p) x sum of gain x p**(rank - 1), gains scaled into [0, 1]
    (Moffat and Zobel; trec_eval's rbp; persistence ``p`` 0.9). Defined on every row."""

    kernel = "rbp"


@register_metric("rbp_resid")
class RetrieverRBPResidualMetric(_PersistenceMetric):
    """How much rank-biased precision could grow if every unjudged item were relevant
    (trec_eval's rbp_resid). Defined on every row."""

    kernel = "rbp_resid"


@register_metric("ndcg_burges", aliases=("ndcg_exp",))
class RetrieverNDCGBurgesMetric(GainMetric):
    """nDCG with gains 2**grade - 1 (Burges et al.; ranx's ndcg_burges; the same as
    ``ndcg(dcg=exp-log2)``)."""

    kernel = "ndcg"

    def __init__(self, top_k: int | None = None, **params: Unpack[RankingParams]) -> None:
        super().__init__(top_k, dcg="exp-log2", **params)


@register_metric("dcg_burges", aliases=("dcg_exp",))
class RetrieverDCGBurgesMetric(RetrieverNDCGBurgesMetric):
    """DCG with gains 2**grade - 1 (ranx's dcg_burges), not normalised."""

    scale = (0.0, None)

    kernel = "dcg"
