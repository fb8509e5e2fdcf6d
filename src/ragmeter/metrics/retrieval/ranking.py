"""Rank-based retrieval metrics over graded relevance, one numpy kernel over all rows.

Relevance matching (``match``):

- ``exact``: a retrieved chunk is relevant when its text equals a reference context (DB-GPT's
  rule; right when both sides come from the same space);
- ``id``: a retrieved id is judged by the row's ``reference_relevance`` (id -> grade) and
  ``reference_ids`` (grade 1);
- ``overlap``: token overlap coefficient >= ``threshold`` (0.8) with a reference context, for
  contexts chunked differently;
- ``auto`` (default): ``id`` for rows that carry retrieved ids and judged ids, ``exact`` otherwise.

An item counts as relevant when its grade is at least the relevance level (``rel``; the
evaluation's ``relevance_level``, default 1; trec_eval's ``-l``). nDCG and the other gain
measures use the grades as gains instead. A row with no relevant item gets a null score with
a reason (every ranking metric is 0/0 there), or 0 with ``no_relevant=zero`` (trec_eval's
convention). A row with nothing retrieved scores 0.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Literal, TypedDict, Unpack

import numpy as np

from ragmeter._grades import MAX_GRADE
from ragmeter.datasets import Dataset, FieldColumn, Row
from ragmeter.metrics.base import (
    BaseEvaluationResult,
    EvaluationMetric,
    RetrieverEvaluationMetric,
    overrides,
)
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.metrics.retrieval import _gain_loops, _kernels
from ragmeter.metrics.retrieval._judge import (
    Buckets,
    Judgements,
    Relevant,
    in_buckets,
    judge_buckets,
    judge_exact,
    judge_overlap,
)
from ragmeter.metrics.retrieval._kernels import Kernel, Options
from ragmeter.reports.columns import ResultColumns

__all__ = [
    "LEGACY_NO_RELEVANT_REASON",
    "MATCH_MODES",
    "NO_RELEVANT_MODES",
    "NO_RELEVANT_REASON",
    "Aggregate",
    "GainMetric",
    "RankingMetric",
    "RankingParams",
    "RetrieverHitRateMetric",
    "RetrieverMAPMetric",
    "RetrieverMRRMetric",
    "RetrieverNDCGMetric",
    "RetrieverPrecisionMetric",
    "RetrieverRecallMetric",
    "judge_rows",
    "null_reason",
]

MatchMode = Literal["auto", "exact", "id", "overlap"]
MATCH_MODES: tuple[str, ...] = ("auto", "exact", "id", "overlap")
NoRelevant = Literal["null", "zero"]
NO_RELEVANT_MODES: tuple[str, ...] = ("null", "zero")
#: how trec_eval's "all" line combines the queries' values
Aggregate = Literal["mean", "sum", "gmean"]
#: every kernel by name
KERNELS: dict[str, Kernel] = {**_kernels.KERNELS, **_gain_loops.KERNELS}
_NO_GAIN_REASON = "no relevant item: no reference has a positive gain, so the metric is 0/0"


def null_reason(level: int, graded: bool = False) -> str:
    """Why a ranking metric has no score on a row: no item at the relevance level (gain
    measures: no item with a positive gain)."""
    if graded:
        return _NO_GAIN_REASON
    return f"no relevant item: the row has no reference of grade >= {level}, so the metric is 0/0"


NO_RELEVANT_REASON = null_reason(1)
#: the reason ranking metrics gave before graded relevance (results stored then keep it)
LEGACY_NO_RELEVANT_REASON = (
    "no relevant item: the row's reference list is empty, so the metric is 0/0"
)


def _judged_ids(table: Dataset) -> np.ndarray:
    """Rows that judge ids: they give reference_ids or reference_relevance."""
    mask: np.ndarray = ~(table.lacking("reference_ids") & table.lacking("reference_relevance"))
    return mask


def _uses_ids(row: Row, match: str) -> bool:
    if match == "id":
        return True
    judged = row.reference_ids is not None or row.reference_relevance is not None
    return match == "auto" and row.retrieved_ids is not None and judged


def _ids_mask(table: Dataset, match: str) -> np.ndarray:
    """Which rows are matched by id: all under ``id``, those with retrieved ids and judged
    ids under ``auto``, none otherwise."""
    if match == "id":
        return np.ones(len(table), dtype=bool)
    if match != "auto":
        return np.zeros(len(table), dtype=bool)
    mask: np.ndarray = ~table.lacking("retrieved_ids") & _judged_ids(table)
    return mask


def _lists(table: Dataset, name: str) -> list[Any]:
    """A list column with ``[]`` where a row lacks it."""
    values = table.column(name)
    return [v or [] for v in values] if table.lacking(name).any() else values


def _judged(table: Dataset) -> list[Relevant]:
    """Each row's judged ids: its reference_relevance, with its reference_ids at grade 1."""
    if not table.has("reference_relevance"):
        return _lists(table, "reference_ids")
    out: list[Relevant] = []
    for ids, grades in zip(
        table.column("reference_ids"), table.column("reference_relevance"), strict=True
    ):
        if grades is None:
            out.append(ids or [])
        elif ids:
            out.append({**dict.fromkeys(ids, 1), **grades})
        else:
            out.append(grades)
    return out


def judge_rows(rows: Dataset | Iterable[Row], match: str, threshold: float = 0.8) -> Buckets:
    """Relevance of every row's retrieved list under a match mode, in one pass over columns,
    rows grouped by list length (``Buckets``)."""
    table = Dataset.of(rows)
    if match == "overlap":
        retrieved = _lists(table, "retrieved_contexts")
        references = _lists(table, "reference_contexts")
        return _grouped(retrieved, references, lambda ret, ref: judge_overlap(ret, ref, threshold))
    ids = _ids_mask(table, match)
    if ids.all():
        return judge_buckets(_lists(table, "retrieved_ids"), _judged(table), checked=True)
    texts = (_lists(table, "retrieved_contexts"), _lists(table, "reference_contexts"))
    if not ids.any():
        return judge_buckets(*texts, checked=True)
    by_id = (_lists(table, "retrieved_ids"), _judged(table))
    picked = [by_id if use else texts for use in ids.tolist()]
    return judge_buckets(
        [side[0][i] for i, side in enumerate(picked)],
        [side[1][i] for i, side in enumerate(picked)],
        checked=True,
    )


def _grouped(
    retrieved: list[Any],
    references: list[Any],
    judge: Callable[[list[Any], list[Any]], Judgements],
) -> Buckets:
    lengths = np.fromiter(map(len, retrieved), dtype=np.int64, count=len(retrieved))

    def one(indexes: np.ndarray | None) -> Judgements:
        if indexes is None:
            return judge(retrieved, references)
        picked = indexes.tolist()
        return judge([retrieved[i] for i in picked], [references[i] for i in picked])

    return in_buckets(lengths, one)


class RankingParams(TypedDict, total=False):
    """The settings every ranking metric takes besides its cut-off (``RankingMetric``'s)."""

    match: MatchMode
    threshold: float
    rel: int | None
    relevance_level: int | None
    no_relevant: NoRelevant | None
    judged_only: bool


class RankingMetric(RetrieverEvaluationMetric):
    """Base of the rank-based metrics: one numpy kernel over all rows' judgements.

    ``rel`` (ir_measures' name; ``relevance_level`` is the same) is the grade from which an
    item is relevant, None for the evaluation's; ``no_relevant`` what a row without a
    relevant item scores (``null`` with a reason, or ``zero`` as trec_eval); ``judged_only``
    drops the items the row does not judge before scoring (trec_eval's ``-J``)."""

    #: the name of its kernel (``_kernels.KERNELS``, ``_gain_loops.KERNELS``)
    kernel: ClassVar[str]
    #: how trec_eval's "all" line combines the queries (a table shows the mean either way)
    scale: ClassVar[tuple[float | None, float | None] | None] = (0.0, 1.0)
    aggregate: ClassVar[Aggregate] = "mean"
    #: the grades are gains (nDCG and its kin): no relevance level, null without a gain
    graded: ClassVar[bool] = False

    def __init__(
        self,
        top_k: int | None = None,
        match: MatchMode = "auto",
        threshold: float = 0.8,
        rel: int | None = None,
        relevance_level: int | None = None,
        no_relevant: NoRelevant | None = None,
        judged_only: bool = False,
    ) -> None:
        if top_k is not None and (
            isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1
        ):
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        if match not in MATCH_MODES:
            raise ValueError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        if rel is not None and relevance_level is not None:
            raise ValueError("give rel or relevance_level, not both (they are one setting)")
        level = rel if rel is not None else relevance_level
        if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
            raise ValueError(f"rel must be a whole number >= 1, got {level!r}")
        if level is not None and not 1 <= level <= MAX_GRADE:
            raise ValueError(f"rel must be a whole number from 1 to {MAX_GRADE}, got {level!r}")
        if no_relevant is not None and no_relevant not in NO_RELEVANT_MODES:
            raise ValueError(f"no_relevant must be null or zero, got {no_relevant!r}")
        if not isinstance(judged_only, bool):
            raise ValueError(f"judged_only must be true or false, got {judged_only!r}")
        self.top_k = top_k
        self.match: MatchMode = match
        self.threshold = threshold
        self.rel = level
        self.no_relevant: NoRelevant | None = no_relevant
        self.judged_only = judged_only
        self.options = Options()

    # -- settings of one evaluation ------------------------------------------------------

    def level(self, ctx: EvaluationContext | None) -> int:
        """The relevance level: the metric's own, else the evaluation's (default 1)."""
        if self.rel is not None:
            return self.rel
        return ctx.relevance_level if ctx is not None else 1

    def zero_when_undefined(self, ctx: EvaluationContext | None) -> bool:
        mode = self.no_relevant or (ctx.no_relevant if ctx is not None else "null")
        return mode == "zero"

    def cut(self, ctx: EvaluationContext | None) -> int | float | None:
        """What the kernel's ``k`` is: the rank cut-off (the metric's or the evaluation's)."""
        return self.top_k if self.top_k is not None else (ctx.top_k if ctx is not None else None)

    def score_judgements(
        self, judgements: Judgements | Buckets, ctx: EvaluationContext | None = None
    ) -> np.ndarray:
        """One float per row, NaN where the metric is undefined (0 with ``no_relevant=zero``)."""
        if isinstance(judgements, Buckets):
            return judgements.map(lambda group: self.score_judgements(group, ctx))
        if self.judged_only:
            judgements = judgements.judged_only()
        options = dataclasses.replace(self.options, level=self.level(ctx))
        scores = KERNELS[self.kernel](judgements, self.cut(ctx), options)
        if self.zero_when_undefined(ctx):
            scores = np.where(np.isnan(scores), 0.0, scores)
        return scores

    def reason(self, ctx: EvaluationContext | None) -> str:
        return null_reason(self.level(ctx), type(self).graded)

    # -- rows ------------------------------------------------------------------------------

    def missing_fields(self, row: Row) -> str | None:
        judged = row.reference_ids is not None or row.reference_relevance is not None
        if self.match == "id":
            if row.retrieved_ids is None:
                return "retrieved_ids"
            return None if judged else "reference_ids (or reference_relevance)"
        if _uses_ids(row, self.match):
            return None
        missing = super().missing_fields(row)
        if missing and self.match == "auto":
            return f"{missing} (or retrieved_ids and reference_ids or reference_relevance)"
        return missing

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        by_id: np.ndarray = rows.lacking("retrieved_ids") | ~_judged_ids(rows)
        if self.match == "id":
            return by_id
        by_text = super().lacking(rows)
        assert by_text is not None  # the retriever base reads columns
        return by_text & by_id if self.match == "auto" else by_text

    def sync_compute(
        self,
        prediction: list[str],
        contexts: Sequence[str] | None = None,
        query: str | None = None,
    ) -> BaseEvaluationResult:
        """Score one row from texts (DB-GPT's call shape); ``contexts`` are the references."""
        retrieved = list(prediction or [])
        references = list(contexts or [])
        if self.match == "overlap":
            judgements = judge_overlap([retrieved], [references], self.threshold)
        else:
            judgements = judge_exact([retrieved], [references])
        score = float(self.score_judgements(judgements)[0])
        if math.isnan(score):
            return BaseEvaluationResult(
                prediction=prediction, contexts=contexts, score=None, feedback=self.reason(None)
            )
        return BaseEvaluationResult(prediction=prediction, contexts=contexts, score=score)

    async def compute_rows(
        self, rows: Dataset | Iterable[Row], ctx: EvaluationContext
    ) -> ResultColumns:
        """All rows at once, from columns; a user subclass that overrides a scoring method
        is called per row."""
        if overrides(self, RankingMetric, "sync_compute") or overrides(
            self, EvaluationMetric, "compute"
        ):
            return await super().compute_rows(rows, ctx)
        table = Dataset.of(rows)
        judgements = ctx.shared(
            ("judgements", self.match, self.threshold),
            lambda: judge_rows(table, self.match, self.threshold),
        )
        scores = self.score_judgements(judgements, ctx)
        cut = self.cut(ctx)
        shown = cut if isinstance(cut, int) else None
        prediction, contexts = _scored_inputs(table, shown, _ids_mask(table, self.match))
        ctx.advance(len(table))
        return ResultColumns(
            self.metric_name,
            scores,
            null_reason=(self.reason(ctx), "input"),
            prediction=prediction,
            contexts=contexts,
        )


def _scored_inputs(
    table: Dataset, k: int | None, ids: np.ndarray
) -> tuple[FieldColumn[Any], FieldColumn[Any]]:
    """What each row was scored on, read when asked for: the retrieved list (cut to ``k``)
    and the references; ids (graded ones as id -> grade) for a row matched by id that has no
    texts. Each says at which rows it is one field of the row (the retrieved list cut to
    ``k``): the texts where rows have them, else the ids."""
    retrieved_ids = table.column("retrieved_ids")
    reference_ids, grades = table.column("reference_ids"), table.column("reference_relevance")
    retrieved_texts = table.column("retrieved_contexts")
    reference_texts = table.column("reference_contexts")
    by_id = ids.tolist()

    def retrieved(i: int) -> Any:
        found = retrieved_texts[i]
        if by_id[i] and found is None:
            found = retrieved_ids[i]
        return found[:k] if found is not None and k is not None else found

    def references(i: int) -> Any:
        found = reference_texts[i]
        if by_id[i] and found is None:
            found = grades[i] if grades[i] is not None else reference_ids[i]
        return found

    texts = ~table.lacking("retrieved_contexts")
    if texts.any():  # the rows with texts are given them
        shown = FieldColumn(len(table), retrieved, retrieved_texts, texts, cut=k)
    else:
        shown = FieldColumn(len(table), retrieved, retrieved_ids, ids, cut=k)
    texts = ~table.lacking("reference_contexts")
    if texts.any():
        judged = FieldColumn(len(table), references, reference_texts, texts)
    else:
        plain = ids & table.lacking("reference_relevance")
        judged = FieldColumn(len(table), references, reference_ids, plain)
    return shown, judged


@register_metric("hit_rate", aliases=("success", "hit", "hitrate"))
class RetrieverHitRateMetric(RankingMetric):
    """Hit rate (trec_eval's success): 1 if any of the top-k retrieved items is relevant, else 0."""

    kernel = "hit_rate"


@register_metric("mrr", aliases=("RR", "recip_rank", "reciprocal_rank"))
class RetrieverMRRMetric(RankingMetric):
    """Mean reciprocal rank: 1 / rank of the first relevant item in the top k, else 0."""

    kernel = "mrr"


@register_metric("precision", aliases=("P",))
class RetrieverPrecisionMetric(RankingMetric):
    """Precision@k = relevant items in the top k / k (/ number retrieved without k)."""

    kernel = "precision"


@register_metric("recall", aliases=("R", "set_recall", "SetR"))
class RetrieverRecallMetric(RankingMetric):
    """Recall@k = relevant items in the top k / number of relevant items."""

    kernel = "recall"


@register_metric("map", aliases=("AP", "average_precision", "map_cut"))
class RetrieverMAPMetric(RankingMetric):
    """Average precision@k = sum of precision@j at relevant ranks j <= k / relevant items."""

    kernel = "map"


class GainMetric(RankingMetric):
    """A measure of the grades as gains: ``gains={1:3,2:9}`` maps grades to other gains,
    ``dcg=exp-log2`` takes 2**grade - 1; no relevance level (null where nothing has a gain)."""

    graded = True

    def __init__(
        self,
        top_k: int | None = None,
        *,
        gains: str | None = None,
        dcg: str = "log2",
        **params: Unpack[RankingParams],
    ) -> None:
        level = params.get("rel", params.get("relevance_level"))
        if level is not None and type(self).graded:
            raise ValueError(
                "the grades are its gains, so a relevance level has no meaning for it; leave "
                "out rel (map grades to gains with gains={...})"
            )
        super().__init__(top_k, **params)
        self.options = gain_options(gains, dcg)


@register_metric("ndcg", aliases=("nDCG", "ndcg_cut"))
class RetrieverNDCGMetric(GainMetric):
    """nDCG@k = DCG@k / ideal DCG@k, DCG = sum of gain / log2(rank + 1), the grades as gains
    (``gains={1:3,2:9}`` to give others; ``dcg=exp-log2`` for 2**grade - 1)."""

    kernel = "ndcg"


_DCG_MODES = ("log2", "exp-log2")


def gain_options(gains: str | None, dcg: str) -> Options:
    """The options of a gain measure: a grade -> gain map (``{1:3,2:9}``, trec_eval's
    ``1=3,2=9`` form too) and the DCG form (``log2``: gain = grade; ``exp-log2``: 2**g - 1)."""
    if dcg not in _DCG_MODES:
        raise ValueError(f"dcg must be log2 or exp-log2, got {dcg!r}")
    return Options(gains=parse_gains(gains) if gains else (), exp_gain=dcg == "exp-log2")


def parse_gains(text: str) -> tuple[tuple[int, float], ...]:
    """``{1:3,2:9}`` or ``1=3,2=9`` -> ((1, 3.0), (2, 9.0)): grades to gains."""
    body = str(text).strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    pairs: dict[int, float] = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        grade, sep, gain = part.replace("=", ":").partition(":")
        try:
            if not sep:
                raise ValueError
            key = int(grade)
            if key in pairs:
                raise KeyError(key)
            pairs[key] = float(gain)
        except KeyError:
            raise ValueError(f"gains: grade {grade} is given twice") from None
        except ValueError:
            raise ValueError(
                f"gains: '{part}' is not grade:gain (e.g. gains={{1:3,2:9}})"
            ) from None
        if not math.isfinite(pairs[int(grade)]):
            raise ValueError(f"gains: the gain of grade {grade} must be a finite number")
    return tuple(sorted(pairs.items()))
