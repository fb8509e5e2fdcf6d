"""Every API call once: method, path, body and how to read the answer's ``data``. The sync
and async clients only differ in how they send a ``Call``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter

from ragmeter.client._errors import ClientError, error_for_status
from ragmeter.config import OnlineRule
from ragmeter.wire.cards import JudgeCardOut
from ragmeter.wire.compare import MetricComparison
from ragmeter.wire.knowledge import AddOut, ChunkInfo, DocumentInfo, HitOut, SpaceInfo
from ragmeter.wire.labels import LabelFormat, LabelIn, LabelOut, LabelsKept
from ragmeter.wire.lineage import RunChanges, RunUpdate
from ragmeter.wire.monitor import AlertEventOut, AlertRuleIn, AlertRuleOut, MonitorOut
from ragmeter.wire.online import OnlineRuleInfo
from ragmeter.wire.pages import Page
from ragmeter.wire.resources import AppOut, DatasetOut, ModelOut, PromptOut, TrecDatasetOut
from ragmeter.wire.review import (
    ReviewCreate,
    ReviewQueueInfo,
    ReviewQueueItems,
    RowLabel,
    RowLabelIn,
)
from ragmeter.wire.rows import RowDetail
from ragmeter.wire.runs import (
    EvaluateServeRequest,
    MetricInfo,
    ResultItem,
    RunCreated,
    RunInfo,
    SceneInfo,
)
from ragmeter.wire.testsets import TestsetCreate, TestsetJob
from ragmeter.wire.traces import (
    TraceDetailOut,
    TraceFlagIn,
    TraceFlagOut,
    TraceOut,
    TracesDatasetIn,
    TracesDatasetOut,
    TracesQuery,
)
from ragmeter.wire.users import AuditEntryOut, UserKeyOut, UserOut

__all__ = ["Call", "ClientError", "RequestLike", "as_request", "read_envelope"]

T = TypeVar("T")
RequestLike = EvaluateServeRequest | Mapping[str, Any]
Files = list[tuple[str, tuple[str, bytes]]]


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: dict[str, Any] | None = None
    files: Files | None = None
    form: dict[str, str] | None = None
    #: waits for a whole evaluation: no read timeout
    long: bool = False
    #: a download: a success's body is the text itself, not an envelope
    download: bool = False


def as_request(request: Any) -> dict[str, Any]:
    """A request body from our model, DB-GPT's (anything with ``dict()``) or a dict."""
    if isinstance(request, BaseModel):
        return request.model_dump(exclude_none=True)
    if isinstance(request, Mapping):
        return EvaluateServeRequest.model_validate(dict(request)).model_dump(exclude_none=True)
    legacy = getattr(request, "dict", None)  # DB-GPT's own request model (pydantic v1 API)
    if callable(legacy):
        return {k: v for k, v in legacy().items() if v is not None}
    raise TypeError(f"expected an EvaluateServeRequest or a dict, got {type(request).__name__}")


def read_envelope(status: int, body: Any) -> Any:
    """``data`` of a successful answer; ClientError with the service's message otherwise."""
    if not isinstance(body, dict) or "success" not in body:
        message = f"unexpected answer: {str(body)[:200]}"
        raise error_for_status(status, message)
    if not body["success"] or status >= 400:
        raise error_for_status(
            status,
            str(body.get("err_msg") or "request failed"),
            code=body.get("err_code"),
            data=body.get("data"),
        )
    return body.get("data")


def _model(kind: Any) -> Callable[[Any], Any]:
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    return adapter.validate_python


def _raw(data: Any) -> Any:
    return data


def _files(paths: Sequence[str | Path], names: Sequence[str] | None) -> Files:
    out: Files = []
    for index, given in enumerate(paths):
        path = Path(given)
        name = names[index] if names is not None else path.name
        out.append(("files", (name, path.read_bytes())))
    return out


# -- evaluation and runs ---------------------------------------------------------------------


def evaluation(request: RequestLike) -> Call[list[list[dict[str, Any]]]]:
    return Call("POST", "/evaluate/evaluation", _raw, json=as_request(request), long=True)


def scenes() -> Call[list[SceneInfo]]:
    return Call("GET", "/evaluate/scenes", _model(list[SceneInfo]))


def metrics(scene_key: str | None) -> Call[list[MetricInfo]]:
    params = {"scene_key": scene_key} if scene_key else None
    return Call("GET", "/evaluate/metrics", _model(list[MetricInfo]), params=params)


def create_run(request: RequestLike) -> Call[RunCreated]:
    return Call("POST", "/evaluate/runs", _model(RunCreated), json=as_request(request))


def get_run(run_id: str) -> Call[RunInfo]:
    return Call("GET", f"/evaluate/runs/{run_id}", _model(RunInfo))


def list_runs(
    offset: int,
    limit: int,
    state: str | None,
    tags: Sequence[str] = (),
    archived: str = "no",
) -> Call[Page[RunInfo]]:
    params: dict[str, Any] = {"offset": offset, "limit": limit, "archived": archived}
    if state:
        params["state"] = state
    if tags:
        params["tag"] = list(tags)
    return Call("GET", "/evaluate/runs", _model(Page[RunInfo]), params=params)


def update_run(run_id: str, update: RunUpdate) -> Call[RunInfo]:
    body = update.model_dump(exclude_none=True)
    return Call("PATCH", f"/evaluate/runs/{run_id}", _model(RunInfo), json=body)


def delete_run(run_id: str) -> Call[RunInfo]:
    return Call("DELETE", f"/evaluate/runs/{run_id}", _model(RunInfo))


def run_changes(run_id: str, other_id: str) -> Call[RunChanges]:
    return Call("GET", f"/evaluate/runs/{run_id}/changes/{other_id}", _model(RunChanges))


def results_page(run_id: str, offset: int, limit: int) -> Call[Page[ResultItem]]:
    params = {"offset": offset, "limit": limit}
    return Call("GET", f"/evaluate/runs/{run_id}/results", _model(Page[ResultItem]), params=params)


def run_row(run_id: str, row_index: int) -> Call[RowDetail]:
    return Call("GET", f"/evaluate/runs/{run_id}/rows/{row_index}", _model(RowDetail))


def compare_runs(
    run_id: str, other_id: str, alpha: float | None = None, margin: float | None = None
) -> Call[list[MetricComparison]]:
    path = f"/evaluate/runs/{run_id}/compare/{other_id}"
    asked = {"alpha": alpha, "margin": margin}
    params = {k: v for k, v in asked.items() if v is not None} or None
    return Call("GET", path, _model(list[MetricComparison]), params=params)


def cancel_run(run_id: str) -> Call[RunInfo]:
    return Call("POST", f"/evaluate/runs/{run_id}/cancel", _model(RunInfo))


def resume_run(run_id: str, retry_failed: bool = False) -> Call[RunInfo]:
    params = {"retry_failed": "true"} if retry_failed else None
    return Call("POST", f"/evaluate/runs/{run_id}/resume", _model(RunInfo), params=params)


# -- knowledge spaces ------------------------------------------------------------------------


def create_space(name: str, description: str, embedder: str | None) -> Call[SpaceInfo]:
    body: dict[str, Any] = {"name": name, "description": description}
    if embedder:
        body["embedder"] = embedder
    return Call("POST", "/knowledge/spaces", _model(SpaceInfo), json=body)


def spaces(offset: int = 0, limit: int = 1000) -> Call[list[SpaceInfo]]:
    params = {"offset": offset, "limit": limit}
    return Call("GET", "/knowledge/spaces", _model(list[SpaceInfo]), params=params)


def space(key: str | int) -> Call[SpaceInfo]:
    return Call("GET", f"/knowledge/spaces/{key}", _model(SpaceInfo))


def delete_space(key: str | int) -> Call[SpaceInfo]:
    return Call("DELETE", f"/knowledge/spaces/{key}", _model(SpaceInfo))


def upload_documents(
    key: str | int, paths: Sequence[str | Path], names: Sequence[str] | None
) -> Call[AddOut]:
    files = _files(paths, names)
    return Call("POST", f"/knowledge/spaces/{key}/documents", _model(AddOut), files=files)


def documents(key: str | int, offset: int = 0, limit: int = 1000) -> Call[list[DocumentInfo]]:
    path = f"/knowledge/spaces/{key}/documents"
    params = {"offset": offset, "limit": limit}
    return Call("GET", path, _model(list[DocumentInfo]), params=params)


def chunks(key: str | int, doc_name: str | None, offset: int, limit: int) -> Call[Page[ChunkInfo]]:
    params: dict[str, Any] = {"offset": offset, "limit": limit}
    if doc_name is not None:
        params["doc_name"] = doc_name
    path = f"/knowledge/spaces/{key}/chunks"
    return Call("GET", path, _model(Page[ChunkInfo]), params=params)


def retrieve(
    key: str | int, query: str, top_k: int, score_threshold: float | None, retriever: str
) -> Call[list[HitOut]]:
    body = {"query": query, "top_k": top_k, "retriever": retriever}
    if score_threshold is not None:
        body["score_threshold"] = score_threshold
    return Call("POST", f"/knowledge/spaces/{key}/retrieve", _model(list[HitOut]), json=body)


def create_testset(key: str | int, body: TestsetCreate) -> Call[TestsetJob]:
    path = f"/knowledge/spaces/{key}/testsets"
    return Call("POST", path, _model(TestsetJob), json=body.model_dump(exclude_none=True))


def testset(job_id: str) -> Call[TestsetJob]:
    return Call("GET", f"/knowledge/testsets/{job_id}", _model(TestsetJob))


def cancel_testset(job_id: str) -> Call[TestsetJob]:
    return Call("POST", f"/knowledge/testsets/{job_id}/cancel", _model(TestsetJob))


# -- prompts, apps, datasets, models ---------------------------------------------------------


def add_prompt(body: dict[str, Any]) -> Call[PromptOut]:
    return Call("POST", "/prompts", _model(PromptOut), json=body)


def prompts(offset: int = 0, limit: int = 1000) -> Call[list[PromptOut]]:
    params = {"offset": offset, "limit": limit}
    return Call("GET", "/prompts", _model(list[PromptOut]), params=params)


def prompt(code: str, method: str = "GET") -> Call[PromptOut]:
    return Call(method, f"/prompts/{code}", _model(PromptOut))


def add_app(name: str, config: Mapping[str, Any], replace: bool) -> Call[AppOut]:
    body = {"name": name, "config": dict(config), "replace": replace}
    return Call("POST", "/apps", _model(AppOut), json=body)


def apps(offset: int = 0, limit: int = 1000) -> Call[list[AppOut]]:
    params = {"offset": offset, "limit": limit}
    return Call("GET", "/apps", _model(list[AppOut]), params=params)


def app(key: str | int, method: str = "GET") -> Call[AppOut]:
    return Call(method, f"/apps/{key}", _model(AppOut))


def models() -> Call[list[ModelOut]]:
    return Call("GET", "/models", _model(list[ModelOut]))


def judge_cards(
    judge_model: str | None, metric: str | None, limit: int
) -> Call[list[JudgeCardOut]]:
    params = {"judge_model": judge_model, "metric": metric, "limit": limit}
    found = {k: v for k, v in params.items() if v is not None}
    return Call("GET", "/judge/cards", _model(list[JudgeCardOut]), params=found)


def upload_dataset(path: str | Path, name: str | None) -> Call[DatasetOut]:
    source = Path(path)
    files: Files = [("file", (source.name, source.read_bytes()))]
    form = {"name": name} if name else None
    return Call("POST", "/datasets", _model(DatasetOut), files=files, form=form)


def upload_trec(
    qrels: str | Path, run: str | Path, name: str | None, depth: int | None, complete: bool
) -> Call[TrecDatasetOut]:
    files: Files = [
        (field, (Path(path).name, Path(path).read_bytes()))
        for field, path in (("qrels", qrels), ("run", run))
    ]
    form = {"complete": "true" if complete else "false"}
    if name:
        form["name"] = name
    if depth is not None:
        form["depth"] = str(depth)
    return Call("POST", "/datasets/trec", _model(TrecDatasetOut), files=files, form=form)


def datasets(offset: int, limit: int) -> Call[Page[DatasetOut]]:
    params = {"offset": offset, "limit": limit}
    return Call("GET", "/datasets", _model(Page[DatasetOut]), params=params)


def dataset(key: str | int) -> Call[DatasetOut]:
    return Call("GET", f"/datasets/{key}", _model(DatasetOut))


def dataset_versions(key: str | int) -> Call[list[DatasetOut]]:
    return Call("GET", f"/datasets/{key}/versions", _model(list[DatasetOut]))


def delete_dataset(key: str | int) -> Call[DatasetOut]:
    return Call("DELETE", f"/datasets/{key}", _model(DatasetOut))


def dataset_rows(key: str | int, offset: int, limit: int) -> Call[Page[dict[str, Any]]]:
    params = {"offset": offset, "limit": limit}
    return Call("GET", f"/datasets/{key}/rows", _model(Page[dict[str, Any]]), params=params)


def users() -> Call[list[UserOut]]:
    return Call("GET", "/users", _model(list[UserOut]))


def add_user(name: str, role: str) -> Call[UserKeyOut]:
    return Call("POST", "/users", _model(UserKeyOut), json={"name": name, "role": role})


def disable_user(name: str) -> Call[UserOut]:
    return Call("POST", f"/users/{name}/disable", _model(UserOut))


def rotate_key(name: str) -> Call[UserKeyOut]:
    return Call("POST", f"/users/{name}/rotate", _model(UserKeyOut))


def whoami() -> Call[UserOut]:
    return Call("GET", "/whoami", _model(UserOut))


def audit(limit: int, before_id: int | None, user: str | None) -> Call[list[AuditEntryOut]]:
    params = {"limit": limit, "before_id": before_id, "user": user}
    found = {k: v for k, v in params.items() if v is not None}
    return Call("GET", "/audit", _model(list[AuditEntryOut]), params=found)


# review queues and the caller's own label of a row (``service.routes.review``)


def create_review(run_id: str, body: ReviewCreate) -> Call[ReviewQueueInfo]:
    payload = body.model_dump(exclude_none=True)
    return Call("POST", f"/evaluate/runs/{run_id}/reviews", _model(ReviewQueueInfo), json=payload)


def reviews(run_id: str) -> Call[list[ReviewQueueInfo]]:
    return Call("GET", f"/evaluate/runs/{run_id}/reviews", _model(list[ReviewQueueInfo]))


def review_items(run_id: str, queue_id: int) -> Call[ReviewQueueItems]:
    path = f"/evaluate/runs/{run_id}/reviews/{queue_id}"
    return Call("GET", path, _model(ReviewQueueItems))


def put_row_label(run_id: str, row_index: int, body: RowLabelIn) -> Call[RowLabel]:
    path = f"/evaluate/runs/{run_id}/rows/{row_index}/labels"
    return Call("PUT", path, _model(RowLabel), json=body.model_dump())


def row_labels(run_id: str, row_index: int) -> Call[list[RowLabel]]:
    path = f"/evaluate/runs/{run_id}/rows/{row_index}/labels"
    return Call("GET", path, _model(list[RowLabel]))


def delete_row_label(run_id: str, row_index: int, metric: str) -> Call[bool]:
    path = f"/evaluate/runs/{run_id}/rows/{row_index}/labels"
    return Call("DELETE", path, _model(bool), params={"metric": metric})


# -- human labels ----------------------------------------------------------------------------


def _labels_path(run_id: str | None, dataset: str | int | None) -> str:
    if (run_id is None) == (dataset is None):
        raise ValueError("name a run_id or a dataset (one of them)")
    return (
        f"/evaluate/runs/{run_id}/labels" if run_id is not None else f"/datasets/{dataset}/labels"
    )


def put_labels(
    labels: Sequence[LabelIn | Mapping[str, Any]], run_id: str | None, dataset: str | int | None
) -> Call[LabelsKept]:
    body = [
        (lb if isinstance(lb, LabelIn) else LabelIn.model_validate(dict(lb))).model_dump(
            exclude_none=True
        )
        for lb in labels
    ]
    path = _labels_path(run_id, dataset)
    return Call("POST", path, _model(LabelsKept), json={"labels": body})


def labels(
    run_id: str | None,
    dataset: str | int | None,
    filters: dict[str, Any],
) -> Call[Page[LabelOut]]:
    params = {k: v for k, v in filters.items() if v is not None}
    return Call("GET", _labels_path(run_id, dataset), _model(Page[LabelOut]), params=params)


def export_labels(
    run_id: str | None, dataset: str | int | None, filters: dict[str, Any], kind: LabelFormat
) -> Call[str]:
    params = {**{k: v for k, v in filters.items() if v is not None}, "format": kind}
    return Call("GET", _labels_path(run_id, dataset), str, params=params, download=True)


# production traces (``service.routes.traces``)


def traces(filters: Mapping[str, Any], offset: int, limit: int) -> Call[Page[TraceOut]]:
    query = TracesQuery.model_validate(dict(filters)).model_dump(exclude_none=True)
    params = {**query, "offset": offset, "limit": limit}
    return Call("GET", "/traces", _model(Page[TraceOut]), params=params)


def trace(trace_id: str) -> Call[TraceDetailOut]:
    return Call("GET", f"/traces/{trace_id}", _model(TraceDetailOut))


def traces_to_dataset(body: TracesDatasetIn) -> Call[TracesDatasetOut]:
    payload = body.model_dump(exclude_none=True)
    return Call("POST", "/traces/dataset", _model(TracesDatasetOut), json=payload)


def flag_trace(trace_id: str, body: TraceFlagIn) -> Call[TraceFlagOut]:
    payload = body.model_dump(exclude_none=True)
    return Call("PUT", f"/traces/{trace_id}/flag", _model(TraceFlagOut), json=payload)


def unflag_trace(trace_id: str, user: str | None) -> Call[bool]:
    params = {} if user is None else {"user": user}
    return Call("DELETE", f"/traces/{trace_id}/flag", _model(bool), params=params)


# -- online evaluation rules (``service.routes.online``) -----------------------------------


def online_rules() -> Call[list[OnlineRuleInfo]]:
    return Call("GET", "/online/rules", _model(list[OnlineRuleInfo]))


def online_rule(name: str, method: str = "GET", body: Any = None) -> Call[OnlineRuleInfo]:
    return Call(method, f"/online/rules/{name}", _model(OnlineRuleInfo), json=body)


def create_online_rule(rule: OnlineRule) -> Call[OnlineRuleInfo]:
    return Call("POST", "/online/rules", _model(OnlineRuleInfo), json=rule.model_dump(mode="json"))


def delete_online_rule(name: str) -> Call[dict[str, str]]:
    return Call("DELETE", f"/online/rules/{name}", _model(dict[str, str]))


# -- monitors and alerts ----------------------------------------------------------------------


def monitor(metrics: Sequence[str], options: dict[str, Any]) -> Call[MonitorOut]:
    params = {"metric": list(metrics), **{k: v for k, v in options.items() if v is not None}}
    return Call("GET", "/online/monitor", _model(MonitorOut), params=params)


def add_alert(body: AlertRuleIn) -> Call[AlertRuleOut]:
    return Call("POST", "/online/alerts", _model(AlertRuleOut), json=body.model_dump())


def alerts() -> Call[list[AlertRuleOut]]:
    return Call("GET", "/online/alerts", _model(list[AlertRuleOut]))


def alert(name: str, method: str = "GET") -> Call[AlertRuleOut]:
    return Call(method, f"/online/alerts/{name}", _model(AlertRuleOut))


def enable_alert(name: str, enabled: bool) -> Call[AlertRuleOut]:
    body = {"enabled": enabled}
    return Call("PATCH", f"/online/alerts/{name}", _model(AlertRuleOut), json=body)


def alert_events(rule: str | None, limit: int) -> Call[list[AlertEventOut]]:
    params: dict[str, Any] = {"limit": limit, **({"rule": rule} if rule else {})}
    return Call("GET", "/online/alert-events", _model(list[AlertEventOut]), params=params)
