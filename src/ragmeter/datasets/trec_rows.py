"""Rows from TREC judgements and a run, as trec_eval pairs them: one row per judged query,
its ranking ordered by score (descending, ties by document id descending), cut at a depth.

A row is ``{"query": QID, "retrieved_ids": [...], "reference_relevance": {docid: grade}}``.
Queries of the run that have no judgements are not evaluated; judged queries the run lacks
are skipped, or with ``complete`` (trec_eval's ``-c``) evaluated with an empty ranking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragmeter.datasets.loader import DatasetLimits
from ragmeter.datasets.trec import Qrels, TrecRun
from ragmeter.errors import ConfigError, DatasetError, LimitError, clip

__all__ = ["TrecRows", "rank", "trec_rows"]


@dataclass(frozen=True, slots=True)
class TrecRows:
    """The rows to evaluate, in query id order (trec_eval's), and what was left out."""

    rows: list[dict[str, Any]]
    runid: str
    #: queries of the run with no judgements: not evaluated
    unjudged: tuple[str, ...]
    #: judged queries the run lacks: skipped, or (``complete``) evaluated with no results
    missing: tuple[str, ...]
    complete: bool

    def skipped_note(
        self, run: str = "the run", qrels: str = "the qrels", complete: str = "--complete"
    ) -> str | None:
        """One line saying which queries were not evaluated (``complete``: how the caller
        names the option that scores missing queries), or None when all were."""
        parts = []
        if self.unjudged:
            count = len(self.unjudged)
            what = "query of" if count == 1 else "queries of"
            has = "has" if count == 1 else "have"
            parts.append(
                f"{count} {what} {run} {has} no judgements in {qrels}: not evaluated "
                f"({_some(self.unjudged)})"
            )
        if self.missing and not self.complete:
            count = len(self.missing)
            what = "query is" if count == 1 else "queries are"
            parts.append(
                f"{count} judged {what} not in {run}: skipped ({_some(self.missing)}; "
                f"{complete} scores them 0)"
            )
        return "; ".join(parts) or None


def _some(qids: tuple[str, ...], shown: int = 5) -> str:
    more = f", ... {len(qids) - shown} more" if len(qids) > shown else ""
    return ", ".join(qids[:shown]) + more


def _check_items(
    evaluated: list[str],
    qrels: Qrels,
    run: TrecRun,
    depth: int | None,
    cap: int,
    limits: DatasetLimits,
) -> None:
    """LimitError naming the first query with more results (within ``depth``) or more
    judgements than a row holds."""
    for qid in evaluated:
        results = len(run.scores.get(qid, {}))
        results = results if depth is None else min(results, depth)
        for what, count in (("results in the run", results), ("judgements", len(qrels[qid]))):
            if count > cap:
                raise LimitError(
                    f"query {clip(qid)!r} has {count:,} {what}; a row holds at most {cap:,} "
                    "(--depth, trec_eval's -M, keeps the first N results)",
                    setting=limits.setting("max_row_items") or "max_row_items",
                    status=413,
                )


def rank(scores: dict[str, float], depth: int | None = None) -> list[str]:
    """Document ids by score, highest first, ties broken by id, highest first (trec_eval's
    order: a string's code points order as its UTF-8 bytes do); the first ``depth``."""
    ordered = sorted(scores.items(), key=_score_then_id, reverse=True)
    if depth is not None:
        del ordered[depth:]
    return [docid for docid, _ in ordered]


def _score_then_id(item: tuple[str, float]) -> tuple[float, str]:
    return item[1], item[0]


def trec_rows(
    qrels: Qrels,
    run: TrecRun,
    *,
    depth: int | None = None,
    complete: bool = False,
    limits: DatasetLimits | None = None,
) -> TrecRows:
    """One row per judged query the run has (every judged query with ``complete``), in query
    id order; ``depth`` keeps the first N results of each ranking (trec_eval's ``-M``).
    ``limits.max_rows`` caps the rows, counted before any ranking is sorted."""
    if depth is not None and (isinstance(depth, bool) or depth < 1):
        raise ConfigError(f"depth must be a whole number >= 1, got {depth!r}")
    judged = sorted(qrels)
    missing = tuple(q for q in judged if q not in run.scores)
    evaluated = judged if complete else [q for q in judged if q in run.scores]
    if not evaluated:
        raise DatasetError(
            "no query of the run has judgements in the qrels; nothing to evaluate (query ids "
            f"of the run: {_some(tuple(sorted(run.scores)))}; of the qrels: {_some(tuple(judged))})"
        )
    if limits is not None and limits.max_rows is not None and len(evaluated) > limits.max_rows:
        raise LimitError(
            f"the qrels and run make {len(evaluated)} rows (queries to evaluate); at most "
            f"{limits.max_rows}",
            setting=limits.setting("max_rows") or "max_rows",
            status=413,
        )
    if limits is not None and limits.max_row_items is not None:
        _check_items(evaluated, qrels, run, depth, limits.max_row_items, limits)
    rows = [
        {
            "query": qid,
            "retrieved_ids": rank(run.scores.get(qid, {}), depth),
            "reference_relevance": qrels[qid],
        }
        for qid in evaluated
    ]
    unjudged = tuple(sorted(q for q in run.scores if q not in qrels))
    return TrecRows(rows, run.runid, unjudged, missing, complete)
