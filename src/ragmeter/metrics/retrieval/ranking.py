"""Rank-based retrieval metrics (hit rate, MRR, precision, recall, nDCG, MAP) with a batch path.

Relevance matching (``match``):

- ``exact``: a retrieved chunk is relevant when its text equals a reference context (DB-GPT's
  rule; right when both sides come from the same space);
- ``id``: a retrieved id is relevant when it is among the row's ``reference_ids``;
- ``overlap``: token overlap coefficient >= ``threshold`` (0.8) with a reference context, for
  contexts chunked differently;
- ``auto`` (default): ``id`` for rows that carry both id lists, ``exact`` otherwise.

A row with no relevant item (empty reference list) gets a null score with a reason: every
ranking metric is 0/0 there (trec_eval reports 0). A row with nothing retrieved scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from ragmeter.datasets import Dataset, LazyColumn, Row
from ragmeter.metrics.base import (
    BaseEvaluationResult,
    EvaluationMetric,
    RetrieverEvaluationMetric,
    overrides,
)
from ragmeter.metrics.context import EvaluationContext
from ragmeter.metrics.registry import register_metric
from ragmeter.metrics.retrieval._judge import Judgements, judge_exact, judge_overlap
from ragmeter.metrics.retrieval._kernels import KERNELS
from ragmeter.reports.columns import ResultColumns

__all__ = [
    "MATCH_MODES",
    "NO_RELEVANT_REASON",
    "RankingMetric",
    "RetrieverHitRateMetric",
    "RetrieverMAPMetric",
    "RetrieverMRRMetric",
    "RetrieverNDCGMetric",
    "RetrieverPrecisionMetric",
    "RetrieverRecallMetric",
    "judge_rows",
]

MatchMode = Literal["auto", "exact", "id", "overlap"]
MATCH_MODES: tuple[str, ...] = ("auto", "exact", "id", "overlap")
NO_RELEVANT_REASON = "no relevant item: the row's reference list is empty, so the metric is 0/0"


def _uses_ids(row: Row, match: str) -> bool:
    if match == "id":
        return True
    return match == "auto" and row.retrieved_ids is not None and row.reference_ids is not None


def _ids_mask(table: Dataset, match: str) -> np.ndarray:
    """Which rows are matched by id: all under ``id``, those with both id lists under
    ``auto``, none otherwise."""
    if match == "id":
        return np.ones(len(table), dtype=bool)
    if match != "auto":
        return np.zeros(len(table), dtype=bool)
    mask: np.ndarray = ~(table.lacking("retrieved_ids") | table.lacking("reference_ids"))
    return mask


def _lists(table: Dataset, name: str) -> list[Any]:
    """A list column with ``[]`` where a row lacks it."""
    values = table.column(name)
    return [v or [] for v in values] if table.lacking(name).any() else values


def judge_rows(rows: Dataset | Iterable[Row], match: str, threshold: float = 0.8) -> Judgements:
    """Relevance of every row's retrieved list under a match mode, in one pass over columns."""
    table = Dataset.of(rows)
    if match == "overlap":
        return judge_overlap(
            _lists(table, "retrieved_contexts"), _lists(table, "reference_contexts"), threshold
        )
    ids = _ids_mask(table, match)
    if ids.all():
        return judge_exact(_lists(table, "retrieved_ids"), _lists(table, "reference_ids"))
    texts = (_lists(table, "retrieved_contexts"), _lists(table, "reference_contexts"))
    if not ids.any():
        return judge_exact(*texts)
    by_id = (_lists(table, "retrieved_ids"), _lists(table, "reference_ids"))
    picked = [by_id if use else texts for use in ids.tolist()]
    return judge_exact(
        [side[0][i] for i, side in enumerate(picked)],
        [side[1][i] for i, side in enumerate(picked)],
    )


class RankingMetric(RetrieverEvaluationMetric):
    """Base of the rank-based metrics: one numpy kernel over all rows' judgements."""

    kernel: ClassVar[str]

    def __init__(
        self, top_k: int | None = None, match: MatchMode = "auto", threshold: float = 0.8
    ) -> None:
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        if match not in MATCH_MODES:
            raise ValueError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        self.top_k = top_k
        self.match: MatchMode = match
        self.threshold = threshold

    def missing_fields(self, row: Row) -> str | None:
        if self.match == "id":
            if row.retrieved_ids is None:
                return "retrieved_ids"
            return "reference_ids" if row.reference_ids is None else None
        if _uses_ids(row, self.match):
            return None
        missing = super().missing_fields(row)
        if missing and self.match == "auto":
            return f"{missing} (or retrieved_ids and reference_ids)"
        return missing

    def lacking(self, rows: Dataset) -> np.ndarray | None:
        by_id: np.ndarray = rows.lacking("retrieved_ids") | rows.lacking("reference_ids")
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
        score = float(KERNELS[self.kernel](judgements, self.top_k)[0])
        if math.isnan(score):
            return BaseEvaluationResult(
                prediction=prediction, contexts=contexts, score=None, feedback=NO_RELEVANT_REASON
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
        k = self.effective_k(ctx)
        scores = KERNELS[self.kernel](judgements, k)
        prediction, contexts = _scored_inputs(table, k, _ids_mask(table, self.match))
        ctx.advance(len(table))
        return ResultColumns(
            self.metric_name,
            scores,
            null_reason=(NO_RELEVANT_REASON, "input"),
            prediction=prediction,
            contexts=contexts,
        )


def _scored_inputs(
    table: Dataset, k: int | None, ids: np.ndarray
) -> tuple[LazyColumn[Any], LazyColumn[Any]]:
    """What each row was scored on, read when asked for: the retrieved list (cut to ``k``)
    and the references; ids for a row matched by id that has no texts."""
    retrieved_ids, references_ids = table.column("retrieved_ids"), table.column("reference_ids")
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
        return references_ids[i] if by_id[i] and found is None else found

    return LazyColumn(len(table), retrieved), LazyColumn(len(table), references)


@register_metric("hit_rate", aliases=("success", "hit", "hitrate"))
class RetrieverHitRateMetric(RankingMetric):
    """Hit rate: 1 if any of the top-k retrieved chunks is relevant, else 0."""

    kernel = "hit_rate"


@register_metric("mrr", aliases=("rr", "recip_rank", "reciprocal_rank"))
class RetrieverMRRMetric(RankingMetric):
    """Mean reciprocal rank: 1 / rank of the first relevant chunk in the top k, else 0."""

    kernel = "mrr"


@register_metric("precision", aliases=("p",))
class RetrieverPrecisionMetric(RankingMetric):
    """Precision@k = relevant chunks in the top k / k (/ number retrieved without k)."""

    kernel = "precision"


@register_metric("recall", aliases=("r",))
class RetrieverRecallMetric(RankingMetric):
    """Recall@k = relevant chunks in the top k / number of relevant items."""

    kernel = "recall"


@register_metric("ndcg", aliases=("ndcg_cut",))
class RetrieverNDCGMetric(RankingMetric):
    """nDCG@k = DCG@k / ideal DCG@k, gain 1/log2(rank+1), binary relevance."""

    kernel = "ndcg"


@register_metric("map", aliases=("ap", "average_precision", "map_cut"))
class RetrieverMAPMetric(RankingMetric):
    """Average precision@k = sum of precision@j at relevant ranks j <= k / relevant items."""

    kernel = "map"
