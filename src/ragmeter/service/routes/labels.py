"""Human labels of a dataset version's rows, over a dataset (``NAME``, ``NAME@V`` or id) or a
run (its dataset version): kept all or none (``LABEL``), read a page at a time or downloaded
as JSONL or CSV (``READ``). A label is its sender's; only an admin names another reviewer."""

from __future__ import annotations

import io
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response, status

from ragmeter.datasets.label_file import write_labels
from ragmeter.errors import DatasetError, LimitError, clip
from ragmeter.runs.labels_io import label_dataset, label_rows, resolve_labels
from ragmeter.runs.storage.labels import LabelStore
from ragmeter.service.envelope import ApiError, Result, ok
from ragmeter.service.permissions import forbidden, request_user
from ragmeter.service.schemas import Limit, Offset
from ragmeter.service.state import Services, services
from ragmeter.service.xlsx import content_disposition
from ragmeter.store.users import Role
from ragmeter.wire.labels import LabelOut, LabelsIn, LabelsKept
from ragmeter.wire.pages import Page

__all__ = ["router"]

router = APIRouter()
Deps = Annotated[Services, Depends(services)]
Format = Annotated[
    Literal["json", "jsonl", "csv"],
    Query(description="json: a page; jsonl or csv: every label as a download"),
]
_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}
_DOWNLOAD: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/x-ndjson": {}, "text/csv": {}}}
}


async def _body_size(request: Request, svc: Deps) -> None:
    """413 for a labels body past ``[server] max_labels_mb`` (before any label is checked)."""
    cap = svc.settings.server.max_labels_mb
    if len(await request.body()) > cap * 1_000_000:
        raise LimitError(
            f"a labels body is larger than {cap:g} MB", setting="[server] max_labels_mb", status=413
        )


def _keep(
    request: Request, svc: Services, body: LabelsIn, run_id: str | None, dataset: str | None
) -> LabelsKept:
    """The labels of ``body`` kept on the dataset version the path names, each the caller's
    (an admin may name another reviewer); 422 naming the first label that names no row of
    it or a value off its metric's scale."""
    user = request_user(request)
    cap = svc.settings.server.max_labels
    if len(body.labels) > cap:
        raise LimitError(
            f"{len(body.labels)} labels in one request; at most {cap}",
            setting="[server] max_labels",
            status=413,
        )
    others = {lb.reviewer for lb in body.labels if lb.reviewer not in (None, user.name)}
    if others and user.role is not Role.ADMIN:
        named = ", ".join(sorted(f"'{clip(str(who))}'" for who in others))
        raise forbidden(user, f"label as {named}: a label is its sender's")
    dataset_id = label_dataset(svc.runs, run_id=run_id, dataset=dataset)
    try:
        made = resolve_labels(
            svc.runs, dataset_id, body.labels, reviewer=user.name, source="labels"
        )
    except DatasetError as exc:
        raise ApiError(422, "invalid_request", str(exc)) from None
    kept = LabelStore(svc.runs.store).put(dataset_id, made, run_id=run_id)
    return LabelsKept(kept=kept, dataset_id=dataset_id)


def _read(
    svc: Services,
    run_id: str | None,
    dataset: str | None,
    found: tuple[str | None, str | None, str, int, int],
) -> Response | Result[Page[LabelOut]]:
    metric, reviewer, kind, offset, limit = found
    dataset_id = label_dataset(svc.runs, run_id=run_id, dataset=dataset)
    store = LabelStore(svc.runs.store)
    if kind == "json":
        page = store.of_dataset(
            dataset_id, metric=metric, reviewer=reviewer, offset=offset, limit=limit
        )
        items = [LabelOut.model_validate(r) for r in label_rows(svc.runs, dataset_id, page)]
        total = store.count(dataset_id, metric=metric, reviewer=reviewer)
        return ok(Page[LabelOut](items=items, total=total, offset=offset, limit=limit))
    cap = svc.settings.server.max_labels
    count = store.count(dataset_id, metric=metric, reviewer=reviewer)
    if count > cap:
        raise LimitError(
            f"{count} labels to download; a download holds at most {cap}: choose a metric or "
            "a reviewer, or read them a page at a time (format=json)",
            setting="[server] max_labels",
            status=422,
        )
    labels = store.of_dataset(dataset_id, metric=metric, reviewer=reviewer)
    out = io.StringIO()
    write_labels(out, label_rows(svc.runs, dataset_id, labels), "csv" if kind == "csv" else "jsonl")
    headers = {"content-disposition": content_disposition(f"labels-{dataset_id}.{kind}")}
    return Response(out.getvalue(), media_type=_TYPES[kind], headers=headers)


@router.post(
    "/datasets/{dataset}/labels",
    tags=["labels"],
    status_code=status.HTTP_201_CREATED,
    dependencies=[Depends(_body_size)],
)
def label_dataset_rows(
    dataset: str, body: LabelsIn, request: Request, svc: Deps
) -> Result[LabelsKept]:
    """Keep labels of a dataset version's rows (``NAME``: its newest), all or none: each names
    its row by ``row_id`` (the row's ``id``), ``query`` (one row's) or ``row_index``; a
    reviewer's earlier label of the same row and metric is replaced."""
    return ok(_keep(request, svc, body, None, dataset))


@router.post(
    "/evaluate/runs/{run_id}/labels",
    tags=["labels"],
    status_code=status.HTTP_201_CREATED,
    dependencies=[Depends(_body_size)],
)
def label_run_rows(run_id: str, body: LabelsIn, request: Request, svc: Deps) -> Result[LabelsKept]:
    """Keep labels of the rows of a run's dataset version (``row_index`` is the run's), all or
    none; every run of that version sees them."""
    return ok(_keep(request, svc, body, run_id, None))


@router.get(
    "/datasets/{dataset}/labels",
    tags=["labels"],
    response_model=Result[Page[LabelOut]],
    responses=_DOWNLOAD,
)
def dataset_labels(
    dataset: str,
    svc: Deps,
    metric: Annotated[str | None, Query(max_length=200)] = None,
    reviewer: Annotated[str | None, Query(max_length=200)] = None,
    format: Format = "json",
    offset: Offset = 0,
    limit: Limit = 100,
) -> Response | Result[Page[LabelOut]]:
    """A dataset version's labels by row, metric and reviewer: a page, or every one as a
    JSONL or CSV download that ``POST`` (and ``ragmeter labels import``) reads again."""
    return _read(svc, None, dataset, (metric, reviewer, format, offset, limit))


@router.get(
    "/evaluate/runs/{run_id}/labels",
    tags=["labels"],
    response_model=Result[Page[LabelOut]],
    responses=_DOWNLOAD,
)
def run_labels(
    run_id: str,
    svc: Deps,
    metric: Annotated[str | None, Query(max_length=200)] = None,
    reviewer: Annotated[str | None, Query(max_length=200)] = None,
    format: Format = "json",
    offset: Offset = 0,
    limit: Limit = 100,
) -> Response | Result[Page[LabelOut]]:
    """The labels of a run's dataset version (``row_index`` is the run's): a page, or a
    JSONL or CSV download."""
    return _read(svc, run_id, None, (metric, reviewer, format, offset, limit))
