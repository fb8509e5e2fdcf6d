"""Review queues of a run (rows picked for people to label by a sampling rule, each given to
``k`` reviewers) and the caller's own label of one row. A reviewer labels as themselves only:
the label's reviewer is always the caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request

from ragmeter.errors import ConfigError, NotFoundError, clip
from ragmeter.runs.review.queues import make_queue, queue_info, reviewer_items
from ragmeter.runs.review.sampling import ReviewOptions
from ragmeter.runs.storage.labels import Label, LabelStore, NewLabel
from ragmeter.runs.storage.review_queues import ReviewQueueStore
from ragmeter.runs.storage.store import metric_names
from ragmeter.service.envelope import Result, ok
from ragmeter.service.permissions import GRANTS, Action, request_user
from ragmeter.service.state import Services, services
from ragmeter.store.lookup import MAX_STORED_INT
from ragmeter.store.users import User
from ragmeter.wire.review import (
    ReviewCreate,
    ReviewQueueInfo,
    ReviewQueueItems,
    RowLabel,
    RowLabelIn,
)

__all__ = ["router"]

router = APIRouter(prefix="/runs", tags=["review"])
Deps = Annotated[Services, Depends(services)]
RowIndex = Annotated[int, Path(ge=0, le=MAX_STORED_INT)]
QueueId = Annotated[int, Path(ge=1, le=MAX_STORED_INT)]
MetricQuery = Annotated[str, Query(min_length=1, max_length=200)]


def _reviewer(svc: Services, name: str, caller: User) -> User:
    """The user ``name`` as a reviewer (the caller as they are; a server without users has
    the caller only), ConfigError naming the reviewer who cannot label."""
    if name == caller.name:
        return caller
    if svc.users.count() == 0:
        raise ConfigError(
            f"reviewers: no user '{clip(name)}' (this server has no users: the one reviewer "
            f"is '{caller.name}')"
        )
    try:
        user = svc.users.get(name)
    except (NotFoundError, ConfigError):
        raise ConfigError(f"reviewers: no user '{clip(name)}'") from None
    if user.disabled:
        raise ConfigError(f"reviewers: user '{user.name}' is disabled")
    return user


def _check_reviewers(svc: Services, names: list[str], caller: User) -> None:
    for name in names:
        user = _reviewer(svc, name, caller)
        if Action.LABEL not in GRANTS[user.role]:
            may = ", ".join(r.value for r, grants in GRANTS.items() if Action.LABEL in grants)
            raise ConfigError(
                f"reviewers: user '{user.name}' has role '{user.role.value}', which may not "
                f"label (roles: {may})"
            )


def _stores(svc: Services) -> tuple[ReviewQueueStore, LabelStore]:
    return ReviewQueueStore(svc.runs.store), LabelStore(svc.runs.store)


@router.post("/{run_id}/reviews", status_code=201)
def create_queue(
    run_id: str, body: ReviewCreate, request: Request, svc: Deps
) -> Result[ReviewQueueInfo]:
    """Pick rows of the run's ``metric`` for review by ``rule`` (random, stratified by score,
    disagreement of repeated judgements, nearest the pass threshold, failures), ``count`` per
    reviewer, each row shown to ``k`` reviewers; each picked row keeps its inclusion
    probability. Reviewers must be users who may label (none given: the caller)."""
    caller = request_user(request)
    names = body.reviewers if body.reviewers is not None else [caller.name]
    options = ReviewOptions(
        body.rule, body.count, tuple(names), body.k, body.seed, body.threshold, body.strata
    )
    options.check()  # the caps first: a long list of names is not looked up
    _check_reviewers(svc, names, caller)
    queues, labels = _stores(svc)
    queue = make_queue(svc.runs, queues, run_id, body.metric, options, caller.name)
    return ok(queue_info(queues, labels, queue))


@router.get("/{run_id}/reviews")
def list_queues(run_id: str, svc: Deps) -> Result[list[ReviewQueueInfo]]:
    """The run's review queues, oldest first, with each reviewer's progress (labelled of
    assigned)."""
    svc.runs.get(run_id)
    queues, labels = _stores(svc)
    return ok([queue_info(queues, labels, q) for q in queues.of_run(run_id)])


@router.get("/{run_id}/reviews/{queue_id}")
def my_queue(
    run_id: str, queue_id: QueueId, request: Request, svc: Deps
) -> Result[ReviewQueueItems]:
    """The caller's rows of a queue in order, each with whether they labelled it."""
    queues, labels = _stores(svc)
    queue = queues.get(run_id, queue_id)
    return ok(reviewer_items(queues, labels, queue, request_user(request).name))


def _run_metric(svc: Services, run_id: str, metric: str) -> int:
    """The run's dataset version, once ``metric`` is checked to be one of the run's."""
    record = svc.runs.get(run_id)
    if metric not in metric_names(record):
        raise ConfigError(f"metric: run '{clip(run_id)}' has no metric '{clip(metric)}'")
    return int(record.dataset_id)


def _row_label(label: Label) -> RowLabel:
    return RowLabel(
        row_index=label.position,
        metric=label.metric,
        reviewer=label.reviewer,
        value=label.value,
        comment=label.comment,
        updated_at=label.updated_at,
    )


@router.get("/{run_id}/rows/{row_index}/labels")
def my_labels(
    run_id: str, row_index: RowIndex, request: Request, svc: Deps
) -> Result[list[RowLabel]]:
    """The caller's own labels of one row (every metric); others' are not shown, so a
    reviewer is not swayed by them."""
    _, labels = _stores(svc)
    dataset_id = labels.dataset_of_run(run_id)
    found = labels.of_dataset(
        dataset_id, reviewer=request_user(request).name, positions=[row_index]
    )
    return ok([_row_label(lb) for lb in found])


@router.put("/{run_id}/rows/{row_index}/labels")
def put_label(
    run_id: str, row_index: RowIndex, body: RowLabelIn, request: Request, svc: Deps
) -> Result[RowLabel]:
    """The caller's label of one row on ``metric`` (a new one replaces theirs): ``value`` on
    the metric's scale, 1/0 for pass/fail. The reviewer is the caller, always."""
    dataset_id = _run_metric(svc, run_id, body.metric)
    _, labels = _stores(svc)
    name = request_user(request).name
    label = NewLabel(row_index, body.metric, name, body.value, body.comment)
    labels.put(dataset_id, [label], run_id=run_id)
    kept = labels.of_dataset(dataset_id, metric=body.metric, reviewer=name, positions=[row_index])
    return ok(_row_label(kept[0]))


@router.delete("/{run_id}/rows/{row_index}/labels")
def delete_label(
    run_id: str, row_index: RowIndex, metric: MetricQuery, request: Request, svc: Deps
) -> Result[bool]:
    """Remove the caller's own label of one row on ``metric``; whether there was one."""
    dataset_id = _run_metric(svc, run_id, metric)
    _, labels = _stores(svc)
    return ok(labels.remove(dataset_id, row_index, metric, request_user(request).name))
