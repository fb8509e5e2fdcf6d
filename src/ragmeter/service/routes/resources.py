"""Prompts, apps, datasets and models. Apps made here are rag or http apps; a Python
callable can only be registered from the command line (it runs code on the server)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile, status
from pydantic import BaseModel, ConfigDict, Field

from ragmeter.apps import HttpAppConfig, RagAppConfig
from ragmeter.datasets import Dataset, DatasetLimits, load_dataset
from ragmeter.datasets.trec import read_qrels, read_run
from ragmeter.datasets.trec_rows import TrecRows, trec_rows
from ragmeter.errors import ConflictError, DatasetError
from ragmeter.runs.storage.cards import CardStore, headline
from ragmeter.service._runs import readable
from ragmeter.service.envelope import Result, ok
from ragmeter.service.permissions import require_owner
from ragmeter.service.schemas import (
    PAGE_BYTES,
    AppOut,
    DatasetOut,
    Limit,
    ModelOut,
    Offset,
    Page,
    PromptOut,
)
from ragmeter.service.state import Services, services
from ragmeter.service.uploads import save_uploads
from ragmeter.store.models import DatasetRecord
from ragmeter.store.names import check_name
from ragmeter.wire.cards import JudgeCardOut
from ragmeter.wire.resources import TrecDatasetOut

__all__ = ["load_upload_rows", "read_dataset_upload", "router"]

router = APIRouter()
Deps = Annotated[Services, Depends(services)]
DATASET_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".json")

# -- prompts -------------------------------------------------------------------------------


class PromptIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(min_length=1, max_length=200)
    template: str = Field(min_length=1, max_length=100_000)
    kind: Literal["judge", "answer"] = "judge"
    language: Literal["en", "zh"] | None = None
    description: str = Field(default="", max_length=10_000)
    replace: bool = False


@router.post("/prompts", tags=["prompts"], status_code=status.HTTP_201_CREATED)
def add_prompt(body: PromptIn, svc: Deps) -> Result[PromptOut]:
    """Store a template: kind judge uses {query}, {context}, {answer}; answer {query}, {context}."""
    try:
        record = svc.prompts.add(
            body.code,
            body.template,
            kind=body.kind,
            language=body.language,
            description=body.description,
            replace=body.replace,
        )
    except ConflictError as exc:
        raise ConflictError(f'{exc}; send "replace": true to overwrite it') from None
    return ok(PromptOut.model_validate(record))


@router.get("/prompts", tags=["prompts"])
def list_prompts(svc: Deps, offset: Offset = 0, limit: Limit = 1000) -> Result[list[PromptOut]]:
    """Prompts by code, at most ``limit`` of them from ``offset``."""
    return ok([PromptOut.model_validate(r) for r in svc.prompts.prompts(offset, limit)])


@router.get("/prompts/{code}", tags=["prompts"])
def get_prompt(code: str, svc: Deps) -> Result[PromptOut]:
    return ok(PromptOut.model_validate(svc.prompts.get(code)))


@router.delete("/prompts/{code}", tags=["prompts"])
def delete_prompt(code: str, svc: Deps) -> Result[PromptOut]:
    record = svc.prompts.get(code)
    svc.prompts.remove(code)
    return ok(PromptOut.model_validate(record))


# -- apps ----------------------------------------------------------------------------------


class AppIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    config: Annotated[RagAppConfig | HttpAppConfig, Field(discriminator="kind")]
    replace: bool = False


@router.post("/apps", tags=["apps"], status_code=status.HTTP_201_CREATED)
def add_app(body: AppIn, svc: Deps) -> Result[AppOut]:
    """Register a rag app (space + model + answer prompt) or an http app (your endpoint). It
    may only name models and secrets the operator allows (``[server] app_secrets``)."""
    svc.app_policy.check(body.config)
    if isinstance(body.config, RagAppConfig):
        svc.kb.space(body.config.space)  # fail now, naming the space, not at the first run
        if body.config.prompt is not None:
            svc.prompts.get(body.config.prompt, kind="answer")
    try:
        record = svc.apps.add(body.name, body.config, replace=body.replace)
    except ConflictError as exc:
        raise ConflictError(f'{exc}; send "replace": true to overwrite it') from None
    return ok(AppOut.model_validate(record))


@router.get("/apps", tags=["apps"])
def list_apps(svc: Deps, offset: Offset = 0, limit: Limit = 1000) -> Result[list[AppOut]]:
    """Apps by name, at most ``limit`` of them from ``offset``."""
    found = svc.apps.apps(offset, limit)
    return ok([AppOut.model_validate(r) for r in found])


@router.get("/apps/{app}", tags=["apps"])
def get_app(app: str, svc: Deps) -> Result[AppOut]:
    return ok(AppOut.model_validate(svc.apps.get(app)))


@router.delete("/apps/{app}", tags=["apps"])
def delete_app(app: str, svc: Deps) -> Result[AppOut]:
    return ok(AppOut.model_validate(svc.apps.remove(app)))


# -- datasets ------------------------------------------------------------------------------


def load_upload_rows(path: Path, name: str, limits: DatasetLimits) -> Dataset:
    """The rows of a file saved from a request, checked against ``limits``; errors name
    ``name`` (the upload), never the server's path. An empty file is refused."""
    dataset = load_dataset(path, name=name, limits=limits)  # errors name the upload, not path
    if len(dataset) == 0:
        raise DatasetError(f"{name} holds no rows")
    return dataset


async def read_dataset_upload(svc: Services, upload: UploadFile) -> tuple[str, Dataset]:
    """An uploaded dataset file (``[server] max_upload_mb``, a known suffix) and its
    checked rows; answers the file's safe name with them."""
    limits = DatasetLimits.from_server(svc.settings.server)
    with tempfile.TemporaryDirectory(prefix="ragmeter-dataset-") as tmp:
        (name,) = await save_uploads(
            [upload], Path(tmp), max_bytes=svc.max_upload_bytes, suffixes=DATASET_SUFFIXES
        )
        rows = await asyncio.to_thread(load_upload_rows, Path(tmp) / name, name, limits)
    return name, rows


@router.post("/datasets", tags=["datasets"], status_code=status.HTTP_201_CREATED)
async def upload_dataset(
    request: Request,
    svc: Deps,
    file: Annotated[UploadFile, File(description="JSONL, JSON or CSV rows")],
    name: Annotated[str | None, Form(max_length=200)] = None,
) -> Result[DatasetOut]:
    """Store rows under a name (default: the file's stem) for ``datasets_name``. Every row
    is checked; a bad one is refused naming its line and field. A name already stored gets
    its next version, unless one of its versions holds the same rows (then that one is
    answered, ``reused``). A member adds versions only to a name whose versions they made."""
    filename, dataset = await read_dataset_upload(svc, file)
    dataset_name = (name or PurePosixPath(filename).stem).strip()
    dataset_name = check_name(dataset_name, "dataset")
    return ok(await _keep(request, svc, dataset, dataset_name, filename))


async def _keep(
    request: Request, svc: Services, dataset: Dataset, name: str, source: str
) -> DatasetOut:
    """Keep the rows as ``name``'s next version (or the version holding them already): 403
    for a member when another user made a version of ``name``."""
    await require_owner(request, "dataset", name)
    rows = [row.to_raw() for row in dataset]
    record, new = await asyncio.to_thread(svc.runs.keep_dataset, rows, name=name, source=source)
    return DatasetOut.model_validate(record).model_copy(update={"reused": not new})


def _trec_rows(
    qrels: tuple[Path, str],
    run: tuple[Path, str],
    depth: int | None,
    complete: bool,
    limits: DatasetLimits,
) -> tuple[TrecRows, Dataset]:
    """Rows from saved TREC files (``(path, upload name)``), checked as every dataset's."""
    made = trec_rows(
        read_qrels(qrels[0], name=qrels[1], limits=limits),
        read_run(run[0], name=run[1], limits=limits),
        depth=depth,
        complete=complete,
        limits=limits,
    )
    return made, load_dataset(made.rows, name=f"{qrels[1]} + {run[1]}", limits=limits)


@router.post("/datasets/trec", tags=["datasets"], status_code=status.HTTP_201_CREATED)
async def upload_trec_dataset(
    request: Request,
    svc: Deps,
    qrels: Annotated[UploadFile, File(description="TREC qrels (QID ITER DOCID REL), or gzip")],
    run: Annotated[
        UploadFile, File(description="TREC run (QID Q0 DOCID RANK SCORE RUNID), or gzip")
    ],
    name: Annotated[str | None, Form(max_length=200)] = None,
    depth: Annotated[int | None, Form(ge=1, description="first N results per query")] = None,
    complete: Annotated[bool, Form(description="judged queries the run lacks count")] = False,
) -> Result[TrecDatasetOut]:
    """Store TREC qrels and a run as rows (default name: the run file's stem), one per
    judged query of the run: ``query``, ``retrieved_ids`` by score (ties by id, both
    descending, as trec_eval), ``reference_relevance``. A bad line is refused naming it."""
    limits = DatasetLimits.from_server(svc.settings.server)
    saved: list[tuple[Path, str]] = []
    with tempfile.TemporaryDirectory(prefix="ragmeter-trec-") as tmp:
        for part, upload in (("qrels", qrels), ("run", run)):
            folder = Path(tmp) / part  # each its own folder: both may have one file name
            (saved_name,) = await save_uploads(
                [upload], folder, max_bytes=svc.max_upload_bytes, suffixes=None
            )
            saved.append((folder / saved_name, saved_name))
        dataset_name = (name or PurePosixPath(saved[1][1]).stem).strip()
        dataset_name = check_name(dataset_name, "dataset")  # before the files are read
        made, dataset = await asyncio.to_thread(
            _trec_rows, saved[0], saved[1], depth, complete, limits
        )
    qrels_name, run_name = saved[0][1], saved[1][1]
    source = f"{qrels_name} + {run_name} (runid {made.runid})"
    out = (await _keep(request, svc, dataset, dataset_name, source)).model_dump()
    return ok(
        TrecDatasetOut(
            **out,
            runid=made.runid,
            unjudged_queries=len(made.unjudged),
            missing_queries=len(made.missing),
            note=made.skipped_note(run_name, qrels_name, "the form field complete=true"),
        )
    )


@router.get("/datasets", tags=["datasets"])
def list_datasets(svc: Deps, offset: Offset = 0, limit: Limit = 50) -> Result[Page[DatasetOut]]:
    """Datasets by name, newest first, each as its newest version with how many versions
    it has and how many runs used any of them."""
    found, total = svc.runs.datasets(offset, limit)
    items = [_with_counts(svc, r) for r in found]
    return ok(Page[DatasetOut](items=items, total=total, offset=offset, limit=limit))


def _with_counts(svc: Services, record: DatasetRecord) -> DatasetOut:
    versions = svc.runs.dataset_versions(str(record.name))
    used = svc.runs.runs_per_dataset([v.id for v in versions])
    out = DatasetOut.model_validate(record)
    return out.model_copy(update={"versions": len(versions), "runs": sum(used.values())})


@router.get("/datasets/{dataset}", tags=["datasets"])
def get_dataset(dataset: str, svc: Deps) -> Result[DatasetOut]:
    """A dataset: by name its newest version, ``NAME@VERSION`` or id one version."""
    return ok(DatasetOut.model_validate(svc.runs.dataset(dataset)))


@router.get("/datasets/{dataset}/versions", tags=["datasets"])
def dataset_versions(dataset: str, svc: Deps) -> Result[list[DatasetOut]]:
    """Every version of a dataset, newest first, each with how many runs used it."""
    record = svc.runs.dataset(dataset)
    versions = svc.runs.dataset_versions(record.name) if record.name else [record]
    used = svc.runs.runs_per_dataset([v.id for v in versions])
    return ok(
        [
            DatasetOut.model_validate(v).model_copy(update={"runs": used.get(v.id, 0)})
            for v in versions
        ]
    )


@router.delete("/datasets/{dataset}", tags=["datasets"])
def delete_dataset(dataset: str, svc: Deps) -> Result[DatasetOut]:
    """Forget a dataset (every version; ``NAME@VERSION`` one): the name is freed, rows that
    runs used stay for those runs. 409 while a test set generation writes into it."""
    found = svc.runs.dataset(dataset)
    svc.testsets.check_free(found.id, found.name)
    return ok(DatasetOut.model_validate(svc.runs.delete_dataset(dataset)))


@router.get("/datasets/{dataset}/rows", tags=["datasets"])
def dataset_rows(
    dataset: str, svc: Deps, offset: Offset = 0, limit: Limit = 100
) -> Result[Page[dict[str, Any]]]:
    record = svc.runs.dataset(dataset)
    found = svc.runs.dataset_rows(record.id, offset, limit, max_bytes=PAGE_BYTES)
    items = [readable(row) for row in found]
    return ok(Page[dict[str, Any]](items=items, total=record.row_count, offset=offset, limit=limit))


# -- models --------------------------------------------------------------------------------


@router.get("/models", tags=["models"])
def list_models(svc: Deps) -> Result[list[ModelOut]]:
    """Names of the models in ragmeter.toml, for ``context.model`` (never their keys)."""
    return ok([ModelOut(name=n) for n in sorted(svc.settings.models)])


# -- judge cards ---------------------------------------------------------------------------


@router.get("/judge/cards", tags=["judge"])
def list_judge_cards(
    svc: Deps,
    judge_model: Annotated[str | None, Query(max_length=300)] = None,
    metric: Annotated[str | None, Query(max_length=200)] = None,
    limit: Limit = 100,
) -> Result[list[JudgeCardOut]]:
    """Judge cards (``ragmeter judge card``), newest first, of one judge model and metric
    when given: each with its headline (``judge card: κ 0.41 [0.33, 0.49], n 817,
    ragtruth``) and the whole card (agreement per language, task and model, cost, latency)."""
    found = CardStore(svc.runs.store).list(judge_model=judge_model, metric=metric, limit=limit)
    return ok(
        [JudgeCardOut.model_validate({**c.as_dict(), "headline": headline(c.card)}) for c in found]
    )
