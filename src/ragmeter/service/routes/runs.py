"""Runs: create (answers at once), list, status with progress and summary, paged results,
cancel and resume. A run resumed after a crash skips every row already stored."""

from __future__ import annotations

import asyncio
import functools
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Response, status
from fastapi.responses import StreamingResponse

from ragmeter.runs.planning.lineage import changes as lineage_changes
from ragmeter.runs.planning.request import EvaluateServeRequest
from ragmeter.runs.storage.store import metric_names
from ragmeter.runs.views.agreement import run_agreement
from ragmeter.runs.views.browse import (
    MAX_BINS,
    RowFilter,
    SearchLimits,
    distribution,
    row_detail,
)
from ragmeter.runs.views.browse import row_page as browse_rows
from ragmeter.runs.views.dataset_diff import dataset_diff
from ragmeter.runs.views.pairs import Chosen, choose, compare_runs, pair_page, scatter
from ragmeter.runs.views.run_view import run_info, run_infos
from ragmeter.service._reads import READS, result_chunks
from ragmeter.service._runs import create_run
from ragmeter.service.envelope import Result, ok
from ragmeter.service.schemas import (
    PAGE_BYTES,
    Limit,
    Offset,
    Page,
    RecordId,
    ResultItem,
    RunCreated,
)
from ragmeter.service.state import Services, services
from ragmeter.store.lookup import MAX_STORED_INT
from ragmeter.wire.compare import MetricComparison, RowPairPage, Scatter
from ragmeter.wire.lineage import LineageChange, RunChanges, RunUpdate
from ragmeter.wire.rows import MetricDistribution, RowDetail, RowView
from ragmeter.wire.runs import RunInfo

__all__ = ["router"]

router = APIRouter(prefix="/runs", tags=["runs"])
Deps = Annotated[Services, Depends(services)]
State = Literal["pending", "running", "done", "failed", "cancelled"]
#: the significance level of a comparison's verdicts
Alpha = Annotated[float, Query(gt=0.0, lt=1.0)]
#: an equivalence margin, in the metrics' own units
Margin = Annotated[float | None, Query(gt=0.0, le=1e9)]


@router.post("", status_code=status.HTTP_202_ACCEPTED)
async def create(body: EvaluateServeRequest, svc: Deps) -> Result[RunCreated]:
    """Queue a run (same body as ``/evaluation``); poll ``GET /runs/{run_id}``."""
    record = await create_run(svc, body)
    return ok(RunCreated(run_id=record.id, state=record.state))


#: text searched in run ids, dataset names and targets; in a run's queries and responses
SearchText = Annotated[str | None, Query(max_length=200)]
#: a metric of the run (its name)
MetricName = Annotated[str | None, Query(max_length=200)]
#: a score threshold: a finite number
Threshold = Annotated[float | None, Query(allow_inf_nan=False)]
Bins = Annotated[int, Query(ge=1, le=MAX_BINS)]
#: tags a run must all have
Tags = Annotated[list[str] | None, Query(max_length=20)]
#: archived runs: left out (no), only them (yes) or both (all)
Archived = Literal["no", "yes", "all"]
#: a row's place in its run (from 0)
RowIndex = Annotated[int, Path(ge=0, le=MAX_STORED_INT)]


@router.get("")
def list_runs(
    svc: Deps,
    offset: Offset = 0,
    limit: Limit = 50,
    state: State | None = None,
    q: SearchText = None,
    dataset_id: RecordId = None,
    summary: bool = False,
    tag: Tags = None,
    archived: Archived = "no",
) -> Result[Page[RunInfo]]:
    """Runs, newest first: of a ``state``, over a dataset, with every ``tag`` given, whose
    id, name, dataset name or target holds ``q``; archived ones only with ``archived=yes``
    (``all``: both). Summaries (per-metric mean and 95% CI) only with ``summary=true``. A
    run whose process died is shown interrupted, never running."""
    found, total = svc.runs.runs(
        offset, limit, state, text=q, dataset_id=dataset_id, tags=tuple(tag or ()),
        archived={"no": False, "yes": True, "all": None}[archived],
    )  # fmt: skip
    items = run_infos(svc.runs, found, summary=summary)
    return ok(Page[RunInfo](items=items, total=total, offset=offset, limit=limit))


@router.get("/{run_id}")
def get_run(run_id: str, svc: Deps) -> Result[RunInfo]:
    """What made the run (``lineage``), its name, tags and note, state, progress (rows done
    of total), per-metric mean with 95% CI, and cost."""
    svc.runs.reap(run_id)
    return ok(run_info(svc.runs, svc.runs.get(run_id)))


@router.patch("/{run_id}")
def update_run(run_id: str, body: RunUpdate, svc: Deps) -> Result[RunInfo]:
    """Rename a run, change its note, archive or unarchive it, add or remove tags."""
    svc.runs.relabel(run_id, name=body.name, note=body.note, archived=body.archived)
    if body.add_tags or body.remove_tags:
        svc.runs.set_tags(run_id, add=body.add_tags, remove=body.remove_tags)
    return ok(run_info(svc.runs, svc.runs.get(run_id), summary=False))


@router.delete("/{run_id}")
def delete_run(run_id: str, svc: Deps) -> Result[RunInfo]:
    """Delete a finished, failed or cancelled run with its results (409 for a pending or
    running one: cancel it first); its dataset stays."""
    info = run_info(svc.runs, svc.runs.get(run_id), summary=False)
    svc.runs.delete_run(run_id)
    return ok(info)


@router.get("/{run_id}/changes/{other_id}")
def changes(run_id: str, other_id: str, svc: Deps) -> Result[RunChanges]:
    """What differs between two runs before their numbers: every fact of their lineage that
    differs (dataset version, target, metrics, judge and prompt, embedder, versions, code),
    and when their dataset versions differ, how many rows were added, removed or changed."""
    base, other = svc.runs.get(run_id), svc.runs.get(other_id)
    found = [
        LineageChange(key=c.key, a=c.a, b=c.b)
        for c in lineage_changes(base.lineage or {}, other.lineage or {})
    ]
    rows = None
    if base.dataset_id != other.dataset_id:
        rows = dataset_diff(svc.runs, base.dataset_id, other.dataset_id)
    return ok(RunChanges(changes=found, rows=rows))


@router.get("/{run_id}/results", response_model=Result[Page[ResultItem]])
def results(run_id: str, svc: Deps, offset: Offset = 0, limit: Limit = 100) -> Response:
    """Stored results in row order; a null ``score`` has its reason in ``error``. A page
    holds at most ``limit`` items and stops early past about 16 MB: page on by the number of
    items it holds. ``raw_dataset`` leaves out a field the item carries itself with the same
    value (``query``), so a large text is sent once."""
    with READS.slot(svc.settings.server.max_reads):
        found, total = svc.runs.results(run_id, offset, limit, max_bytes=PAGE_BYTES)
        chunks = result_chunks(found, total, offset, limit)
    return StreamingResponse(iter(chunks), media_type="application/json")


@router.get("/{run_id}/rows")
def rows(
    run_id: str,
    svc: Deps,
    offset: Offset = 0,
    limit: Limit = 50,
    metric: MetricName = None,
    sort: Literal["row", "score"] = "row",
    order: Literal["asc", "desc"] = "asc",
    failures_first: bool = False,
    below: Threshold = None,
    q: SearchText = None,
) -> Result[Page[RowView]]:
    """The run's rows, one item per dataset row with every metric's score (query and response
    cut short): by row index or by ``metric``'s score (``sort``, ``order``; nulls last),
    ``failures_first`` (a null or not-passing ``metric``, or any metric when unset), only rows
    whose ``metric`` scored ``below`` a threshold, or whose query or response holds ``q``."""
    record = svc.runs.get(run_id)
    metrics = metric_names(record)
    chosen = RowFilter(
        metric=metric, sort=sort, order=order, failures_first=failures_first, below=below, text=q
    )
    server = svc.settings.server
    limits = SearchLimits(seconds=server.search_seconds, at_once=server.max_searches)
    found, total = browse_rows(svc.runs.store, run_id, metrics, chosen, offset, limit, limits)
    return ok(Page[RowView](items=found, total=total, offset=offset, limit=limit))


@router.get("/{run_id}/rows/{row_index}")
def row(run_id: str, row_index: RowIndex, svc: Deps) -> Result[RowDetail]:
    """One row in full: query, response, reference, the retrieved contexts in rank order with
    relevance marked, and every metric's score, feedback, null reason and the judge's
    reasoning (``details``, null when not recorded); ``previous`` and ``next`` stored rows.
    404 naming the index when the run holds no such row."""
    svc.runs.get(run_id)
    return ok(row_detail(svc.runs.store, run_id, row_index))


@router.get("/{run_id}/distribution")
def distributions(run_id: str, svc: Deps, bins: Bins = 10) -> Result[list[MetricDistribution]]:
    """Per metric of the run: a histogram of its scores in ``bins`` bins (on 0-1 when every
    score lies there) and its null results counted by kind and reason."""
    record = svc.runs.get(run_id)
    metrics = metric_names(record)
    return ok([distribution(svc.runs.store, run_id, name, bins) for name in metrics])


@router.get("/{run_id}/compare/{other_id}")
def compare(
    run_id: str, other_id: str, svc: Deps, alpha: Alpha = 0.05, margin: Margin = None
) -> Result[list[MetricComparison]]:
    """Per metric both runs have: each run's mean and the paired difference (other - base)
    over rows both scored (paired by row id, else query text), with a bootstrap CI and the
    sign-flip test's p-value, both Bonferroni-corrected across the metrics (a 1 - ``alpha``
    family-wise interval), and the verdict: better, worse, no_evidence, or equivalent when
    ``margin`` is given and the interval lies inside +-margin."""
    base, other = _with_metrics(svc, run_id, other_id)
    return ok(compare_runs(svc.runs.store, base, other, alpha=alpha, margin=margin))


#: the metric two runs are compared on row by row (one both runs have)
PairMetric = Annotated[str, Query(min_length=1, max_length=200)]


def _with_metrics(svc: Services, *run_ids: str) -> list[tuple[str, list[str]]]:
    """Each run (404 for an unknown one) as its id and metric names."""
    infos = [run_info(svc.runs, svc.runs.get(run_id), summary=False) for run_id in run_ids]
    return [(info.run_id, info.metrics) for info in infos]


def _chosen(svc: Services, base_id: str, other_id: str, metric: str) -> Chosen:
    base, other = _with_metrics(svc, base_id, other_id)
    return choose(svc.runs.store, base, other, metric)


@router.get("/{run_id}/compare/{other_id}/rows")
def compare_rows(
    run_id: str,
    other_id: str,
    svc: Deps,
    metric: PairMetric,
    offset: Offset = 0,
    limit: Limit = 50,
    regressions_only: bool = False,
) -> Result[RowPairPage]:
    """The rows of both runs (``run_id`` the baseline, ``other_id`` the candidate) paired as
    the comparison pairs them, with ``metric``'s two scores and their difference: largest
    regression first (nulls last), only the rows that got worse with ``regressions_only``."""
    chosen = _chosen(svc, run_id, other_id, metric)
    found = pair_page(
        svc.runs.store, chosen, regressions_only=regressions_only, offset=offset, limit=limit
    )
    return ok(found)


@router.get("/{run_id}/compare/{other_id}/scatter")
def compare_scatter(run_id: str, other_id: str, svc: Deps, metric: PairMetric) -> Result[Scatter]:
    """Baseline score against candidate score of every row both runs scored on ``metric``:
    each distinct point with its count, or past ``MAX_POINTS`` (2,000) counts on a 40 x 40
    grid, so the answer stays small however large the runs are."""
    return ok(scatter(svc.runs.store, _chosen(svc, run_id, other_id, metric)))


@router.get("/{run_id}/agreement")
def agreement(
    run_id: str, svc: Deps, metric: MetricName = None, threshold: Threshold = None
) -> Result[dict[str, Any]]:
    """The judge's agreement with the human labels of the run's rows, per metric and per
    row language: against each reviewer and the reviewers' majority (kappa, balanced
    accuracy, F1, Spearman, a confusion matrix, each with a bootstrap CI and its n),
    Krippendorff's alpha among the reviewers, and the mean corrected by the labels (PPI++,
    with its 95% CI)."""
    record = svc.runs.get(run_id)
    return ok(run_agreement(svc.runs.store, record, metric=metric, threshold=threshold))


@router.post("/{run_id}/cancel")
async def cancel(run_id: str, svc: Deps) -> Result[RunInfo]:
    """Stop a pending or running run; rows finished so far stay, the rest can be resumed."""
    record = await asyncio.to_thread(svc.runs.request_cancel, run_id)
    svc.manager.cancel(run_id)
    return ok(await asyncio.to_thread(run_info, svc.runs, record))


@router.post("/{run_id}/resume", status_code=status.HTTP_202_ACCEPTED)
async def resume(run_id: str, svc: Deps, retry_failed: bool = False) -> Result[RunInfo]:
    """Queue a failed, cancelled or interrupted run again; only its missing rows are done.
    ``retry_failed=true`` also redoes the rows holding a null score an upstream failure left
    (a judge, embedder or app that failed); rows with deterministic nulls are kept."""
    current = await asyncio.to_thread(svc.runs.get, run_id)
    if current.state in ("cancelled", "failed"):
        await svc.manager.wait(run_id)  # its worker may still be stopping (shielded wait)
    record = await asyncio.to_thread(
        functools.partial(svc.runs.reopen, run_id, retry_failed=retry_failed)
    )
    svc.manager.submit(run_id)
    return ok(await asyncio.to_thread(run_info, svc.runs, record))
