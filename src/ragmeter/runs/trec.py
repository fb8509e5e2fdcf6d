"""``evaluate_trec``: a run against TREC qrels with trec_eval's measures and conventions,
through the ordinary evaluation (one row per judged query), and its ``trec_eval -q`` text.

trec_eval's conventions hold: a judged query with no relevant document scores 0 (not null),
a document is relevant from grade ``relevance_level`` (``-l``), nDCG's gains are the grades,
queries of the run without judgements are not evaluated and judged queries the run lacks
are skipped unless ``complete`` (``-c``) scores them 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter._grades import MAX_GRADE
from ragmeter._specs import split_specs
from ragmeter.datasets.trec import (
    Qrels,
    TrecRun,
    qrels_from_mapping,
    read_qrels,
    read_run,
    run_from_mapping,
)
from ragmeter.datasets.trec_rows import TrecRows, trec_rows
from ragmeter.errors import ConfigError
from ragmeter.metrics.registry import create_metric
from ragmeter.metrics.retrieval.trec import TrecMeasure, expand_measures
from ragmeter.reports import EvaluationReport
from ragmeter.runs.api import evaluate
from ragmeter.runs.views.trec_table import Value, format_trec, trec_values

__all__ = ["TrecEvaluation", "evaluate_trec"]

#: trec_eval's measures when none are named
DEFAULT_MEASURES = ("official",)


@dataclass(frozen=True)
class TrecEvaluation:
    """trec_eval's values of one run: ``per_query[qid][name]`` (the measures trec_eval prints
    per query), ``all[name]`` over the evaluated queries, by trec_eval's names (``P_5``)."""

    measures: tuple[TrecMeasure, ...]
    per_query: dict[str, dict[str, Value]]
    all: dict[str, Value]
    runid: str
    #: queries of the run with no judgements: not evaluated
    unjudged: tuple[str, ...]
    #: judged queries the run lacks: skipped, or with ``complete`` evaluated with no results
    missing: tuple[str, ...]
    complete: bool
    #: the evaluation behind the values (its metrics named by ragmeter's specs)
    report: EvaluationReport

    def to_trec(self, *, per_query: bool = True) -> str:
        """What ``trec_eval -q`` prints for this run (``per_query=False``: ``trec_eval``)."""
        return format_trec(self.measures, (self.per_query, self.all), per_query=per_query)

    def skipped_note(
        self, run: str = "the run", qrels: str = "the qrels", complete: str = "complete=True"
    ) -> str | None:
        """One line saying which queries were not evaluated, or None when all were."""
        rows = TrecRows([], self.runid, self.unjudged, self.missing, self.complete)
        return rows.skipped_note(run, qrels, complete)


def _qrels(qrels: Any) -> Qrels:
    if isinstance(qrels, str | os.PathLike):
        return read_qrels(qrels)
    return qrels_from_mapping(qrels)


def _run(run: Any, runid: str | None) -> TrecRun:
    if isinstance(run, str | os.PathLike):
        found = read_run(run)
        return found if runid is None else TrecRun(found.scores, runid)
    return run_from_mapping(run, runid=runid or "run")


def _measures(measures: str | Sequence[str] | None) -> list[TrecMeasure]:
    items = split_specs(measures) if isinstance(measures, str) else list(measures or ())
    found = expand_measures(items or DEFAULT_MEASURES)
    if not found:
        raise ConfigError("no measures given")
    for measure in found:
        if measure.spec is not None and getattr(create_metric(measure.spec), "no_relevant", None):
            raise ConfigError(
                f"measure '{measure.spec}': a TREC evaluation scores a query with no relevant "
                "document 0, as trec_eval does; leave out no_relevant"
            )
    return found


def _kept_as(store: bool | str, run: Any, runid: str) -> str | None:
    """A stored TREC evaluation's rows are kept as dataset "RUN-FILE-STEM" (or the run's
    RUNID for a dict), versioned as any dataset."""
    if not store:
        return None
    from ragmeter.runs.planning.lineage import dataset_name_of

    name = dataset_name_of(str(run)) if isinstance(run, str | Path) else None
    return name or dataset_name_of(f"{runid}.trec") or "trec"


def evaluate_trec(
    qrels: str | os.PathLike[str] | Mapping[str, Mapping[str, int]],
    run: str | os.PathLike[str] | Mapping[str, Mapping[str, float]],
    measures: str | Sequence[str] | None = None,
    *,
    relevance_level: int = 1,
    depth: int | None = None,
    complete: bool = False,
    store: bool | str = False,
    runid: str | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> TrecEvaluation:
    """Evaluate ``run`` against ``qrels`` (TREC files, plain or gzip, or pytrec_eval's dicts
    ``{qid: {docid: grade}}`` and ``{qid: {docid: score}}``) with trec_eval's ``measures``
    (its names or nicknames, ``"P.5,10"``, or ragmeter specs; default ``official``).

    ``depth`` keeps each ranking's first N (trec_eval's ``-M``), ``complete`` scores judged
    queries the run lacks as 0 (``-c``), ``relevance_level`` is ``-l``. ``runid`` names a
    run given as a dict (default ``run``). ``store`` keeps the evaluation as a run, as
    ``evaluate``'s does. Every file is read and checked before any work."""
    level = relevance_level
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= MAX_GRADE:
        raise ConfigError(
            f"relevance_level must be a whole number from 1 to {MAX_GRADE}, got {level!r}"
        )
    chosen = _measures(measures)
    made = trec_rows(_qrels(qrels), _run(run, runid), depth=depth, complete=complete)
    specs = list(dict.fromkeys(m.spec for m in chosen if m.spec is not None))
    if not specs:
        raise ConfigError(
            "runid and relstring alone measure nothing: add a measure (e.g. map, P.10)"
        )
    report = evaluate(
        made.rows,
        specs,
        relevance_level=relevance_level,
        no_relevant="zero",
        store=store,
        on_progress=on_progress,
        dataset_name=_kept_as(store, run, made.runid),
    )
    scores = {spec: report.scores(spec) for spec in specs}
    per_query, over_all = trec_values(chosen, made.rows, scores, made.runid)
    return TrecEvaluation(
        tuple(chosen),
        per_query,
        over_all,
        made.runid,
        made.unjudged,
        made.missing,
        complete,
        report,
    )
