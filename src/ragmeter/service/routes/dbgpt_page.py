"""The routes DB-GPT's built evaluation page (``/evaluation`` of dbgpt-app 0.8.2) calls, which
no DB-GPT backend serves: its datasets and evaluations are ragmeter's stored datasets and runs,
answered in DB-GPT's envelope through the same auth, stores and limits as the rest of the API.

Where the page asks for something ragmeter does not keep, the closest honest value is given:
a dataset's ``code`` is its name; ``storage_type`` is ``oss`` for a dataset uploaded as a file
and ``db`` for rows typed into the page; ``members`` are not kept (always null); a run's
``user_id`` is the ``user-id`` header of the request that started it, kept with its request."""

from __future__ import annotations

import asyncio
import json
import math
import tempfile
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Header, Query, UploadFile
from fastapi.responses import Response

from ragmeter.datasets import DatasetLimits
from ragmeter.errors import ConfigError, LimitError
from ragmeter.runs.planning.request import EvaluateServeRequest
from ragmeter.service._runs import create_run
from ragmeter.service.envelope import ApiError, Result, ok
from ragmeter.service.middleware import json_too_deep
from ragmeter.service.routes.resources import load_upload_rows, read_dataset_upload
from ragmeter.service.state import Services, services
from ragmeter.service.workbooks import dataset_workbook, results_workbook
from ragmeter.service.xlsx import EXPORTS, xlsx_response
from ragmeter.store.models import DatasetRecord, RunRecord
from ragmeter.store.names import check_name
from ragmeter.wire.dbgpt import (
    DbgptContentUpload,
    DbgptDataset,
    DbgptEvaluation,
    DbgptMembersUpdate,
    DbgptPage,
    DbgptStartRequest,
)

__all__ = ["frame_router", "router"]

router = APIRouter(tags=["dbgpt-page"])
#: the page frame's own calls (``/api/v1/...``), answered so it shows no error pop-ups
frame_router = APIRouter(tags=["dbgpt-page"])
Deps = Annotated[Services, Depends(services)]
UserId = Annotated[str | None, Header(alias="user-id", max_length=200)]
PageNo = Annotated[int, Query(ge=1, le=2**31)]
PageSize = Annotated[int, Query(ge=1, le=1000)]
#: rows the 评分明细 (score details) pop-up shows; the xlsx download holds them all
DETAIL_ROWS = 200
#: characters of a text the pop-up shows
DETAIL_CHARS = 500
#: metrics a recall evaluation gets when the page names none (its form does not require one)
RECALL_DEFAULT_METRICS = ["RetrieverHitRateMetric", "RetrieverMRRMetric"]
#: lists the form's pickers read (spaces, apps), at most this many
PICKER_LIMIT = 1000


def _when(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _page(items: list[Any], total: int, page: int, size: int) -> dict[str, Any]:
    return DbgptPage[Any](
        items=items,
        total_count=total,
        total_pages=math.ceil(total / size),
        page=page,
        page_size=size,
    ).model_dump()


# -- datasets ----------------------------------------------------------------------------------


def _dataset(svc: Services, record: DatasetRecord) -> DbgptDataset:
    """A stored dataset as the page lists it; ``have_answer`` says whether its first row
    carries a reference answer."""
    first = svc.runs.dataset_rows(record.id, 0, 1)
    suffix = PurePosixPath(record.source).suffix.lower().lstrip(".")
    return DbgptDataset(
        code=record.name or str(record.id),
        name=record.name or str(record.id),
        file_type=suffix or "json",
        storage_type="oss" if suffix else "db",
        storage_position=record.source,
        datasets_count=record.row_count,
        have_answer=bool(first and first[0].get("reference")),
        gmt_create=_when(record.created_at),
        gmt_modified=_when(record.created_at),  # a stored dataset never changes
    )


@router.get("/datasets")
def list_datasets(svc: Deps, page: PageNo = 1, page_size: PageSize = 10) -> Result[dict[str, Any]]:
    """Stored datasets, newest first, a page at a time."""
    found, total = svc.runs.datasets((page - 1) * page_size, page_size)
    return ok(_page([_dataset(svc, r) for r in found], total, page, page_size))


async def _store_rows(svc: Services, name: str, filename: str, dataset: Any) -> DbgptDataset:
    name = check_name(name, "dataset")
    rows = (row.to_raw() for row in dataset)
    record = await asyncio.to_thread(svc.runs.add_dataset, rows, name=name, source=filename)
    return await asyncio.to_thread(_dataset, svc, record)


@router.post("/dataset/upload/file")
@router.post("/dataset/upload")
async def upload_file(
    svc: Deps,
    dataset_name: Annotated[str, Form(min_length=1, max_length=200)],
    doc_file: Annotated[UploadFile, File(description="JSONL, JSON or CSV rows")],
    members: Annotated[str | None, Form(max_length=10_000)] = None,
) -> Result[DbgptDataset]:
    """Store an uploaded file's rows under ``dataset_name`` (same checks as ``POST
    /datasets``); ``members`` is accepted and not kept."""
    filename, dataset = await read_dataset_upload(svc, doc_file)
    return ok(await _store_rows(svc, dataset_name.strip(), filename, dataset))


def _content_suffix(content: str) -> str:
    """The format of rows typed into the page: a JSON array, JSON lines, else CSV."""
    start = content.lstrip()[:1]
    return ".json" if start == "[" else ".jsonl" if start == "{" else ".csv"


@router.post("/dataset/upload/content")
async def upload_content(body: DbgptContentUpload, svc: Deps) -> Result[DbgptDataset]:
    """Store rows typed into the page (a JSON array, JSON lines or CSV with a header)."""
    data = body.content.encode()
    if len(data) > svc.max_upload_bytes:
        raise LimitError(
            f"content is larger than {svc.max_upload_bytes / 1_000_000:g} MB",
            setting="[server] max_upload_mb",
            status=413,
        )
    name = body.dataset_name.strip()
    limits = DatasetLimits.from_server(svc.settings.server)
    with tempfile.TemporaryDirectory(prefix="ragmeter-dataset-") as tmp:
        path = Path(tmp) / f"content{_content_suffix(body.content)}"
        path.write_bytes(data)
        dataset = await asyncio.to_thread(load_upload_rows, path, "content", limits)
    return ok(await _store_rows(svc, name, "", dataset))


@router.post("/dataset/members/update")
def update_members(body: DbgptMembersUpdate, svc: Deps) -> Result[None]:
    """Members are not kept by ragmeter: the dataset is looked up (an unknown one is a 404)
    and the change is refused as not supported, so the page says the update failed."""
    svc.runs.dataset(body.code)
    raise ApiError(
        501,
        "not_supported",
        "ragmeter keeps no dataset members; use API keys to control access "
        "(ragmeter 不保存数据集成员，请用 API 密钥控制访问)",
    )


@router.delete("/dataset")
def delete_dataset(svc: Deps, code: Annotated[str, Query(max_length=200)]) -> Result[bool]:
    """Delete a dataset by code; runs that used it keep its rows (unnamed). 409 while a test
    set generation writes into it."""
    found = svc.runs.dataset(code)
    svc.testsets.check_free(found.id, found.name)
    svc.runs.delete_dataset(code)
    return ok(True)


@router.get("/dataset/download", response_model=None)
async def download_dataset(svc: Deps, code: Annotated[str, Query(max_length=200)]) -> Response:
    """The dataset's rows as xlsx, one column per field; an error is the JSON envelope."""
    record = await asyncio.to_thread(svc.runs.dataset, code)
    limit = svc.settings.server.max_exports
    url = svc.runs.store.url
    path = await EXPORTS.build(limit, dataset_workbook, url, record.id, record.name or "dataset")
    return xlsx_response(path, f"{record.name or record.id}.xlsx")


@router.get("/storage/types")
def storage_types() -> Result[list[dict[str, str]]]:
    """How a dataset is added: ``oss`` a file, ``db`` rows typed in (DB-GPT's two kinds)."""
    return ok([{"oss": "File (JSONL, JSON, CSV) / 文件"}, {"db": "Content / 文本内容"}])


@router.get("/test_auth")
def auth_check(user_id: UserId = None) -> Result[dict[str, Any]]:
    """Reached only with a valid key (when keys are configured): the page may call the API."""
    return ok({"authorized": True, "user_id": user_id})


# -- evaluations -------------------------------------------------------------------------------


def _metric_names(record: RunRecord) -> list[str]:
    return list(record.spec.get("metric_names") or record.spec.get("metrics", []))


def _average_score(svc: Services, record: RunRecord) -> str | None:
    """Per metric its mean over the rows done so far, as the JSON text the page parses."""
    if not record.done_rows:
        return None
    means = {k: v.get("mean") for k, v in svc.runs.summary(record).items()}
    return json.dumps({k: None if v is None else round(float(v), 4) for k, v in means.items()})


def _evaluation(svc: Services, record: RunRecord) -> DbgptEvaluation:
    """A run as the page lists it; ``log_info`` is its error, or its progress while it runs."""
    dataset = svc.runs.dataset(record.dataset_id)
    asked = record.request or {}
    progress = f"{record.done_rows}/{record.total_rows} rows"
    return DbgptEvaluation(
        evaluate_code=record.id,
        scene_key=record.scene_key,
        scene_value=record.scene_value,
        datasets=dataset.name or "",
        datasets_name=dataset.name or "(rows sent with the request / 请求中的数据)",
        evaluate_metrics=",".join(_metric_names(record)),
        context=asked.get("context") or {},
        user_name=asked.get("user_name"),
        user_id=asked.get("user_id"),
        sys_code=asked.get("sys_code"),
        parallel_num=str(record.spec.get("concurrency") or asked.get("parallel_num") or ""),
        state=record.state,
        average_score=_average_score(svc, record),
        log_info=record.error or progress,
        gmt_create=_when(record.created_at),
        gmt_modified=_when(record.finished_at or record.started_at or record.created_at),
    )


@router.get("/evaluations")
def list_evaluations(
    svc: Deps, page: PageNo = 1, page_size: PageSize = 10
) -> Result[dict[str, Any]]:
    """Runs, newest first, a page at a time, with each one's mean per metric."""
    found, total = svc.runs.runs((page - 1) * page_size, page_size)
    return ok(_page([_evaluation(svc, r) for r in found], total, page, page_size))


def _single_list(value: str | list[str] | None) -> list[str]:
    items = value if isinstance(value, list) else (value or "").split(",")
    return [m.strip() for m in items if m and m.strip()]


def _context(value: dict[str, Any] | str | None, max_depth: int) -> dict[str, Any] | None:
    """``context`` as an object; sent as JSON text, that text nests no deeper than the
    body may (``max_depth`` counts the body's own level, which holds ``context``)."""
    if value is None or isinstance(value, dict):
        return value
    if not value.strip():
        return None
    if json_too_deep(value.encode(), max_depth - 1):
        raise LimitError(
            f"context: the JSON text nests deeper than {max_depth - 1} levels, as deep as "
            f"the body may hold it",
            setting="[server] max_json_depth",
        )
    try:
        found = json.loads(value)
    except ValueError:
        raise ConfigError("context must be a JSON object") from None
    if not isinstance(found, dict):
        raise ConfigError("context must be a JSON object")
    return found


def _parallel(value: int | str | None) -> int | None:
    if isinstance(value, int) or value is None:
        return value
    if not value.strip():
        return None
    try:
        return int(value.strip())
    except ValueError:
        raise ConfigError(f"parallel_num must be a whole number, got {value[:50]!r}") from None


def serve_request(
    body: DbgptStartRequest, user_id: str | None, max_depth: int
) -> EvaluateServeRequest:
    """The page's form as the API's request: ``datasets`` names a stored dataset, strings
    become lists and numbers; a recall evaluation without metrics gets hit rate and MRR."""
    metrics = _single_list(body.evaluate_metrics)
    if not metrics and body.scene_key == "recall":
        metrics = list(RECALL_DEFAULT_METRICS)
    return EvaluateServeRequest(
        evaluate_code=body.evaluate_code or None,
        scene_key=body.scene_key,
        scene_value=body.scene_value,
        datasets_name=body.datasets.strip(),
        evaluate_metrics=metrics,
        context=_context(body.context, max_depth),
        parallel_num=_parallel(body.parallel_num),
        user_name=body.user_name,
        user_id=user_id or body.user_id,
        sys_code=body.sys_code,
    )


@router.post("/start")
async def start(body: DbgptStartRequest, svc: Deps, user_id: UserId = None) -> Result[Any]:
    """Queue a run (the same path as ``POST /runs``) and answer at once with it; the
    ``user-id`` header is kept as the run's ``user_id`` with its request."""
    request = serve_request(body, user_id, svc.settings.server.max_json_depth)
    record = await create_run(svc, request)
    found = await asyncio.to_thread(svc.runs.get, record.id)
    return ok(await asyncio.to_thread(_evaluation, svc, found))


@router.delete("/evaluation")
def delete_evaluation(
    svc: Deps, evaluation_code: Annotated[str, Query(max_length=64)]
) -> Result[bool]:
    """Delete a finished run and its results (a pending or running one: cancel it first)."""
    svc.runs.delete_run(evaluation_code)
    return ok(True)


def _text(value: Any, limit: int = DETAIL_CHARS) -> str:
    """``value`` as the pop-up shows it: texts as they are, a list of texts (a recall run's
    retrieved chunks) numbered ``[1] ... [2] ...``, anything else as JSON; cut to ``limit``."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        text = " ".join(f"[{i}] {v}" for i, v in enumerate(value, 1))
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _detail_rows(svc: Services, run_id: str) -> list[dict[str, Any]]:
    """One flat object per row (the pop-up's columns are the first object's keys): the
    query, the answer, and per metric its score, or why it has none."""
    names = _metric_names(svc.runs.get(run_id))
    found, _total = svc.runs.results(run_id, 0, DETAIL_ROWS * max(len(names), 1))
    rows: dict[int, dict[str, Any]] = {}
    for result in found:
        row = rows.get(result.row_index)
        if row is None:
            row = {"code": str(result.row_index), "query": _text(result.query)}
            row["answer"] = "" if result.prediction is None else _text(result.prediction)
            row.update(dict.fromkeys(names, ""))
            rows[result.row_index] = row
        score = result.score
        row[result.metric_name] = (
            round(score, 4) if score is not None else _text(f"null: {result.error or ''}")
        )
    return list(rows.values())


@router.get("/evaluation/detail/show")
def show_detail(
    svc: Deps, evaluate_code: Annotated[str, Query(max_length=64)]
) -> Result[list[dict[str, Any]]]:
    """The score details of a run's first rows (at most ``DETAIL_ROWS``; the download holds
    every row), texts cut to ``DETAIL_CHARS`` characters."""
    return ok(_detail_rows(svc, evaluate_code))


@router.get("/evaluation/result/download", response_model=None)
async def download_results(
    svc: Deps, evaluate_code: Annotated[str, Query(max_length=64)]
) -> Response:
    """Every result of the run as xlsx, one line per row and metric; an error is JSON."""
    record = await asyncio.to_thread(svc.runs.get, evaluate_code)
    limit = svc.settings.server.max_exports
    path = await EXPORTS.build(limit, results_workbook, svc.runs.store.url, record.id)
    return xlsx_response(path, f"evaluation-{record.id}.xlsx")


# -- the page frame and the form's pickers ------------------------------------------------------


@frame_router.post("/knowledge/space/list")
def space_list(svc: Deps) -> Result[list[dict[str, Any]]]:
    """Knowledge spaces for the recall scene's picker (``id``, ``name``)."""
    return ok(
        [
            {
                "id": s.id,
                "name": s.name,
                "vector_type": s.embedder,
                "desc": s.description,
                "docs": s.documents,
                "gmt_created": _when(s.created_at),
            }
            for s in svc.kb.spaces(0, PICKER_LIMIT)
        ]
    )


@frame_router.post("/app/list")
def app_list(svc: Deps) -> Result[dict[str, Any]]:
    """Registered apps for the app scene's picker: ``app_code`` and ``app_name`` are its name."""
    apps = [
        {"app_code": a.name, "app_name": a.name, "app_describe": a.kind, "team_mode": a.kind}
        for a in svc.apps.apps(0, PICKER_LIMIT)
    ]
    return ok({"app_list": apps, "total_count": len(apps), "total_page": 1, "current_page": 1})


@frame_router.get("/model/types")
def model_types() -> Result[list[Any]]:
    """DB-GPT's model workers: ragmeter runs none, so none."""
    return ok([])


@frame_router.get("/chat/dialogue/list")
def dialogue_list() -> Result[list[Any]]:
    """DB-GPT's chat history: ragmeter keeps none, so none."""
    return ok([])
